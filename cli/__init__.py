"""cortexkit command line: click commands only; the methods live in cortexkit.tools."""
