"""The one exception type that means "the user gave us something we cannot use".

The CLI base turns a :class:`CortexError` into a single line
``cortexkit TOOL VERB: error: <message>`` on stderr and exit status 1, with no traceback
unless ``--debug``. The message should say what is wrong and what to do about it.
"""


class CortexError(Exception):
    """A user-facing error: bad input, wrong artifact kind, impossible request."""
