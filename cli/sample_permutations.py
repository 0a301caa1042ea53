"""cortexkit sample-permutations: learn, score and sample distributions over permutations."""

from __future__ import annotations

import math

import click

from cortexkit.cli.base import NONNEGATIVE, Count, POSITIVE, UNIT, Float, output_option, tool_group, verb
from cortexkit.tools.permutations import schema as _schema  # noqa: F401  (registers the schemas checked on read)
from cortexkit.formats.errors import CortexError

group = tool_group(
    "sample-permutations",
    help="Distributions over permutations through factorized codes (Lehmer, Fisher-Yates, "
         "insertion vectors): fit, sample, score, encode, decode, evaluate.",
)

REPRESENTATIONS = ("inline", "lehmer", "fisher-yates", "insertion")
MODELS = ("product", "rim", "mallows", "gmallows", "plackett-luce", "ar", "mlm")
FORMATS = ("auto", "artifact", "preflib", "text", "movielens", "table")

MAN = {
    "DESCRIPTION": """
Learn, score and sample probability distributions over permutations of n items, after Severo,
Karrer and Nolte, "Learning Distributions over Permutations and Rankings with Factorized
Representations" (ICLR 2026). A permutation is written as a vector of n digits, each with its own
legal range, and a model puts one categorical distribution on each digit:

- inline: the ordering itself, every digit in [0, n-1] (a baseline: most digit vectors are not
permutations, so its samples can be invalid);
- lehmer: right-hand Lehmer code L_i = #{j>i : y_j < y_i} of the ordering relabelled by the
reference order, range [0, n-1-i]; sum(L) is the Kendall distance to the reference;
- fisher-yates: the draws J_i in [0, n-1-i] of a Fisher-Yates shuffle (swap a[i] and a[i+J_i]);
J_i >= 1 everywhere gives exactly the n-cycles (Sattolo);
- insertion: insertion vector V_k in [0, k], the slot at which reference item k is inserted;
a prefix V_0..V_{r-1} fixes the relative order of the first r reference items.

Encoding and decoding are exact for any n and cost O(n log n) per permutation.

Models (fit --model):

- product: free per-digit categoricals (the 1-NFE mode), fitted by counting;
- rim: the Repeated Insertion Model, i.e. product on insertion vectors;
- mallows: Mallows-Kendall, p(x) proportional to exp(-theta d_K(x, reference)), theta by maximum likelihood;
- gmallows: generalized (Fligner-Verducci) Mallows, one theta per Lehmer digit;
- plackett-luce: Plackett-Luce item weights by maximum likelihood;
- ar: a transformer over the digits with causal attention (NFE = n, any distribution);
- mlm: the same network trained as a masked model (t ~ U{1..n} digits masked, cross-entropy on
the masked digits weighted n/t); it samples with any NFE = k by splitting the digits into k
blocks (contiguous by default, --partition random draws one partition from --seed) and sampling
each block in parallel given the earlier ones.

Logits outside a digit's legal range are -inf, so every sample of a lehmer, fisher-yates or
insertion model decodes to a valid permutation. score and evaluate report the exact
log-likelihood of the sampler actually used (that NFE and partition).

Search strategies (sample --strategy). sample draws random permutations. greedy and beam look for the most
likely permutations instead (MAP-style decoding, as jigsaw and other tasks with one right answer
are scored): beam keeps the --beam-width best partial codes of each row and extends them block by
block (the digits of one block are independent given the earlier ones, so the best joint values of
a block are found exactly); greedy is beam with width 1, the argmax of each block in turn. For an
autoregressive model (or a masked model at NFE = n) this is the usual beam search over digits, and
a width at least the number of permutations is exact MAP. For a masked model at NFE = 1 without
conditioning, and for product, rim, mallows and gmallows models, the result is the exact mode
(per-digit argmax: for mallows the centre) and -n K gives the exact K most likely permutations;
for plackett-luce greedy is the exact mode (items by decreasing weight) and beam searches over
positions. The log-likelihood of each permutation found is written beside it; without --given it
equals what score reports for that NFE, partition and --seed (with --given, the log-likelihood
of the completion given the prefix).

Orderings and rankings. An ordering lists the item at each position, most preferred first; a
ranking gives the position of each item (the inverse permutation). permutations artifacts and
PrefLib files hold orderings. Text files hold orderings unless --as rankings is given. Items
are 0-based inside cortexkit; text input may be 1-based (--base 1, or auto when no 0 appears).

Inputs (--format auto picks one from the bytes and the file name): permutations artifacts,
PrefLib .soc/.soi files (incomplete .soi orders need --partial drop|shuffle), text with one
permutation per line (commas, semicolons or whitespace), and MovieLens-style rating tables
(u.data, ratings.csv): each user gives --draws rows, a random subset of --n-items of the movies
with at least --min-ratings ratings, ordered by rating with ties broken at random per draw;
local item k is the k-th most popular of the row's movies (popularity from training users), so
the identity reference is popularity order. Users are split --test-fraction by --split-seed and
--split train|test|all picks a side.

Conditional models (ar or mlm only) learn p(permutation | row context). fit --condition items
reads each row's outside item ids (the movie ids of a rating table, or the items tensor of a
permutations artifact): item k of a row becomes a conditioning token, added to digit k and
visible to every digit; score and evaluate then need rows with items, and sample needs --items
FILE (-n samples per row). fit --condition features --context FILE reads feature vectors
instead: FILE's context tensor (N, m, d) holds m tokens of d floats for each of the N rows of
DATA, in the same order (say the pixels of each jigsaw piece). The tokens are mapped to the
model width by --context-encoder linear (default) or mlp (one hidden layer of --context-hidden
units, GELU) and are visible to every digit; with m = n token i is also added to digit i, so
write DATA so that position i of a row is what token i describes (for lehmer codes digit i is
about position i of the ordering). score, evaluate and sample then need --context FILE with
one row per permutation (sample: one permutation per context row, or -n per row).

Pointer head (fit --head pointer; --model ar --representation lehmer with one aligned token per
item). Lehmer digit j is the index of item x_j among the items not yet placed; instead of a
linear layer over the n digit values, the pointer head lists those free items in increasing
order (replaying the earlier digits) and scores value v by <h_j, E[free_j(v)]>/sqrt(d) + b[free_j(v)]
with a learned item table E and bias b, -inf outside [0, n-1-j]: still one exact categorical
per digit, the same size as the linear head, and better where a digit's meaning (which item)
depends on the earlier digits, as in jigsaw puzzles.

Bad input (an item repeated or missing, ragged rows, items outside 0..n-1, a NaN rating, an n
that does not match the model) is rejected with one line naming the row, before any work, and
no output file is written.
""",
    "EXAMPLES": """
Fit Mallows and an autoregressive model to the sushi rankings and compare held-out NLL:

    cortexkit sample-permutations fit sushi.soc --model mallows \\
        --reference borda -o mallows.st
    cortexkit sample-permutations fit train.st --model ar \\
        --representation insertion \\
        --reference borda --epochs 60 -o ar.st
    cortexkit sample-permutations evaluate ar.st test.st --nfe 10 | yq .nll

Sample 10000 permutations from a masked model in 2 forward passes and look at them:

    cortexkit sample-permutations sample mlm.st -n 10000 --nfe 2 --seed 1 \\
        | cortexkit inspect -

The 5 most likely permutations of an autoregressive model by beam search (width 32), and the
mode of a Mallows model (its centre), with their log-likelihoods:

    cortexkit sample-permutations sample ar.st --strategy beam --beam-width 32 \\
        -n 5 | cortexkit inspect -
    cortexkit sample-permutations sample mallows.st --strategy greedy -o mode.st

Complete a partial ranking (items 3 then 7 on top) with a lehmer model:

    cortexkit sample-permutations sample model.st -n 5 --given 3,7 \\
        | cortexkit convert - out.csv

Re-rank movies: a conditional model on MovieLens training users, completions for test users
whose order of the 3 most popular of their 10 movies is known (2, then 0, then 1):

    cortexkit sample-permutations fit u.data --split train --n-items 10 \\
        --model ar \\
        --condition items -o ml.st
    cortexkit sample-permutations sample ml.st --items u.data --split test \\
        -n 32 --given 2,0,1 -o c.st

Jigsaw puzzles: row i of train.st holds the grid cell of each shuffled piece (an ordering
read as "position = piece, item = cell"), ctrain.st the pieces' flattened pixels, context
(N, 9, 81) for 3x3 puzzles of 9x9 patches; solve test puzzles by beam search and score them:

    cortexkit sample-permutations fit train.st --model ar \\
        --representation lehmer \\
        --condition features --context ctrain.st --head pointer \\
        --context-encoder mlp \\
        --epochs 20 --lr 2e-3 --batch-size 128 -o jigsaw.st
    cortexkit sample-permutations sample jigsaw.st --strategy beam \\
        --beam-width 5 \\
        --context ctest.st -o solved.st
    cortexkit sample-permutations score jigsaw.st test.st --context ctest.st \\
        | yq .mean_nll

A context file from numpy: np.savez("c.npz", context=x) then cortexkit convert c.npz c.st.

Encode orderings as insertion vectors relative to their Borda order, and back:

    cortexkit sample-permutations encode orders.txt --representation insertion \\
        --reference borda \\
        | cortexkit sample-permutations decode - -o same.st

Score held-out rankings at NFE 1, 2, 5 and 10:

    for k in 1 2 5 10; do cortexkit sample-permutations score mlm.st test.st \\
        --nfe $k | yq .mean_nll; done
""",
    "FILES": """
- permutations artifact (kind permutations; written by sample and decode, read by every verb)
:: orderings: (count, n) int16 or int32, item indices 0..n-1, most preferred first. Optional
items: (count, n) int64, outside ids of each row's local items (MovieLens movie ids); ratings:
(count, n) float32, the rating of each local item; users: (count,) int64; log_likelihood:
(count,) float64, written by sample --strategy greedy|beam, the exact log-likelihood in nats of
each decoded permutation under the model (rows of one search best first). Metadata
permutations.items holds item names (JSON list) when known.
- permutation-codes artifact (written by encode, read by decode) :: codes: (count, n) int16 or
int32 digits; reference: (n,) int64. Metadata permutations.representation.
- permutation-model artifact (written by fit) :: reference: (n,) int64 reference order.
product, rim, mallows, gmallows: log_probs (n, n) float32, row i the log-probabilities of digit
i (-inf outside its range); mallows and gmallows also theta (n,) float32 (phi = exp(-theta)).
plackett-luce: log_weights (n,) float32. ar and mlm: net.* the transformer's weights (float32),
and for --condition items vocabulary (V,) int64, the item ids the model has tokens for,
with the architecture in metadata permutations.net (JSON). Metadata permutations.model,
permutations.n, permutations.representation, permutations.info (fit summary, JSON).
- scores artifact (kind permutation-scores; score --scores PATH) :: log_likelihood: (count,)
float64 in nats.
- context file (--context FILE) :: read by fit --condition features, sample, score and
evaluate: any safetensors file (any kind, or none) holding context: (N, m, d) float16/32/64, m feature
tokens of d values for each of the N permutations it goes with, row by row; NaN or infinite
values are rejected. Feature-conditioned models store the token shape in permutations.net
(context_len = m, context_dim = d) and their encoder in net.context_projection.*; pointer-head
models hold net.item_embedding (n, d-model) and net.item_bias (n,) instead of net.head.*.
""",
    "SEE ALSO": "cortexkit(1), cortexkit-inspect(1), cortexkit-convert(1)",
    "REFERENCE": """
D. Severo, B. Karrer, N. Nolte. Learning Distributions over Permutations and Rankings with
Factorized Representations. ICLR 2026 (arXiv 2505.24664). Mallows (1957); Fligner and Verducci
(1986); Doignon, Pekec and Regenwetter (2004, repeated insertion); Plackett (1975), Luce (1959).
""",
}


# ----------------------------------------------------------------------------------------------
# shared options and readers (the method itself is cortexkit.tools.permutations.api)


def input_options(func):
    options = [
        click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
                     help="Input format (auto: from the bytes and the file name)."),
        click.option("--as", "as_", type=click.Choice(["orderings", "rankings"]), default="orderings",
                     show_default=True, help="Text rows are orderings (item per position) or "
                                             "rankings (position per item)."),
        click.option("--base", type=click.Choice(["auto", "0", "1"]), default="auto", show_default=True,
                     help="Item numbering of text input (auto: 1-based when no 0 appears)."),
        click.option("--partial", type=click.Choice(["error", "drop", "shuffle"]), default="error",
                     show_default=True, help="Incomplete PrefLib orders: reject, drop, or complete "
                                             "with the missing items in random order."),
        click.option("--n-items", type=click.IntRange(min=2), default=10, show_default=True,
                     help="MovieLens: movies per user ranking."),
        click.option("--min-ratings", type=click.IntRange(min=1), default=100, show_default=True,
                     help="MovieLens: keep movies with at least this many ratings."),
        click.option("--split", type=click.Choice(["all", "train", "test"]), default="all",
                     show_default=True, help="MovieLens: which users (split by --split-seed)."),
        click.option("--test-fraction", type=UNIT, default=0.2, show_default=True,
                     help="MovieLens: fraction of users in the test split."),
        click.option("--split-seed", type=int, default=0, show_default=True,
                     help="MovieLens: seed of the user split and of the subsets and tie-breaks."),
        click.option("--draws", type=click.IntRange(min=1), default=1, show_default=True,
                     help="MovieLens: rankings drawn per user."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


INPUT_KEYS = ("fmt", "as_", "base", "partial", "n_items", "min_ratings", "split", "test_fraction",
              "split_seed", "draws")


def pop_input(kwargs: dict):
    from cortexkit.formats.rankings import OrderOptions

    return OrderOptions(**{k: kwargs.pop(k) for k in INPUT_KEYS})


def write_orders(run, x, names=None, extra=None):
    import numpy as np

    x = np.asarray(x)
    tensors = {"orderings": x.astype(np.int16 if x.shape[1] < 2**15 else np.int32)}
    tensors.update(extra or {})
    meta = {"permutations.n": str(x.shape[1])}
    if names:
        meta["permutations.items"] = list(names)
    run.write_artifact(tensors, "permutations", metadata=meta)


def nfe_options(func):
    func = click.option("--partition", type=click.Choice(["contiguous", "random"]), default="contiguous",
                        show_default=True, help="Blocks of a masked model's NFE steps: contiguous digit "
                                                "ranges, or one random partition drawn from --seed.")(func)
    return func


# ----------------------------------------------------------------------------------------------
# verbs


# left out of --help (shown by --help-all and the man page): rating-table details and the
# network/optimiser hyperparameters whose defaults rarely need a change
ADVANCED_INPUT = ("base", "partial", "min_ratings", "test_fraction", "split_seed", "draws")
ADVANCED_NET = ("smoothing", "weight_decay", "val_fraction", "patience", "val_nfe", "d_model", "layers",
                "heads", "ff", "dropout")


@verb(group, "fit", output="artifact", torch_options=True, advanced=ADVANCED_INPUT + ADVANCED_NET)
@click.argument("data", metavar="DATA|-")
@click.option("--model", "kind", type=click.Choice(MODELS), default="mlm", show_default=True,
              help="Model family (see DESCRIPTION).")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default="insertion",
              show_default=True, help="Digit code the model works on.")
@click.option("--reference", default="identity", show_default=True, metavar="identity|borda|FILE",
              help="Reference order of lehmer/insertion codes (the Mallows centre).")
@click.option("--condition", type=click.Choice(["none", "items", "features"]), default="none",
              show_default=True, help="ar/mlm: on each row's 'items' ids or --context.")
@click.option("--context", "context_file", default=None, metavar="FILE",
              help="'context' (rows, m, d) for --condition features.")
@click.option("--head", type=click.Choice(["linear", "pointer"]), default="linear", show_default=True,
              help="ar lehmer: digit j points at a free item.")
@click.option("--context-encoder", type=click.Choice(["linear", "mlp"]), default="linear",
              show_default=True, help="mlp: one hidden layer (--context-hidden).")
@click.option("--context-hidden", type=click.IntRange(min=1), default=None, hidden=True,
              help="Hidden width of the mlp context encoder (default --ff).")
@click.option("--smoothing", type=NONNEGATIVE, default=0.5, show_default=True,
              help="product/rim: pseudo-counts added to every legal digit value.")
@click.option("--epochs", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--lr", type=POSITIVE, default=1e-3, show_default=True)
@click.option("--weight-decay", type=NONNEGATIVE, default=1e-2, show_default=True)
@click.option("--val-fraction", type=Float(0, 0.9), default=0.1, show_default=True,
              help="Part of DATA held out to keep the best epoch (neural models).")
@click.option("--patience", type=click.IntRange(min=1), default=30, show_default=True,
              help="Stop after this many epochs without a better validation NLL.")
@click.option("--val-nfe", type=click.IntRange(min=1), default=None,
              help="mlm: keep the epoch with the best validation NLL at this NFE (default n).")
@click.option("--d-model", type=click.IntRange(min=4), default=64, show_default=True)
@click.option("--layers", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--heads", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--ff", type=click.IntRange(min=4), default=128, show_default=True)
@click.option("--dropout", type=Float(0, 1, max_open=True), default=0.1, show_default=True)
@click.option("--group", default=None, metavar="TENSOR|COLUMN",
              help="Validation holds out whole groups: a tensor of DATA (users), or a table column.")
@input_options
def fit(run, data, kind, representation, reference, condition, context_file, head, context_encoder,
        context_hidden, smoothing, epochs, batch_size, lr, weight_decay, val_fraction, patience, val_nfe,
        d_model, layers, heads, ff, dropout, group, **kwargs):
    """Fit a model to permutations (DATA -> permutation-model artifact)."""
    from cortexkit.tools.permutations import api, io

    config = api.FitConfig(kind, representation, reference, condition, head, context_encoder, context_hidden,
                           smoothing, api.TrainConfig(epochs, batch_size, lr, weight_decay, val_fraction,
                                                        patience, val_nfe),
                           d_model, layers, heads, ff, dropout, has_context_file=context_file is not None)
    orders = io.load_orders(data, api.replace(pop_input(kwargs), group=group))
    if condition == "items" and orders.items is None:
        raise CortexError(f"{data}: --condition items needs per-row item ids (a rating table or a "
                          "permutations artifact with an 'items' tensor)")
    for note in orders.notes:
        run.info(note)
    context = None
    if condition == "features":
        context = io.read_context(context_file, len(orders.orderings))
    fitted = api.fit(config, orders.orderings,
                     reference=io.parse_reference(reference, orders.orderings.shape[1]), items=orders.items,
                     context=context, context_name=context_file, groups=orders.groups, seed=run.seed, device=run.device,
                     info=run.info, detail=run.detail, warn=run.warn,
                     progress=lambda it: run.progress(it, desc="epochs"))
    tensors, meta = api.model_tensors(fitted, orders.item_names)
    run.write_artifact(tensors, "permutation-model", metadata=meta)
    run.info(api.summary(fitted))


@verb(group, "sample", output="artifact", torch_options=True, advanced=ADVANCED_INPUT + ("batch_size",))
@click.argument("model_file", metavar="MODEL|-")
@click.option("-n", "--num", type=Count(bytes_each=16, what="permutations"), default=None,
              help="sample: how many permutations to draw (default 1000). beam: how many of the "
                   "best to keep (default 1, at most --beam-width). greedy: 1.")
@click.option("--nfe", type=click.IntRange(min=1), default=None,
              help="Forward passes of a masked model (default n; products use 1).")
@nfe_options
@click.option("--strategy", type=click.Choice(["sample", "greedy", "beam"]), default="sample",
              show_default=True, help="sample: random draws. greedy: per-step argmax. beam: beam "
                                      "search for the most likely permutations (MAP-style).")
@click.option("--beam-width", type=click.IntRange(min=1), default=None,
              help="--strategy beam: partial codes kept per step (default 16; 1 is greedy).")
@click.option("--given", default=None, metavar="I,J,...",
              help="Condition on a partial ranking: the top items in order (lehmer, fisher-yates, "
                   "inline, plackett-luce), or the order of the first r reference items (insertion).")
@click.option("--given-file", "given_file", default=None, metavar="FILE",
              help="Per-row evidence: 'given' (rows, r) padded with -1, or a table; one "
                   "--given per row (with --items/--context: row for row).")
@click.option("--items", "items_file", default=None, metavar="FILE",
              help="Conditional models: rows whose item ids to condition on (permutations artifact "
                   "with 'items', or a rating table); -n samples are drawn for each row.")
@click.option("--context", "context_file", default=None, metavar="FILE",
              help="Feature-conditioned models: 'context' rows; one sample per row (-n per row).")
@click.option("--batch-size", type=click.IntRange(min=1), default=65536, show_default=True)
@input_options
def sample(run, model_file, num, nfe, partition, strategy, beam_width, given, given_file, items_file,
           context_file, batch_size, **kwargs):
    """Draw permutations from a model, or decode its most likely ones (MODEL -> permutations)."""
    from cortexkit.tools.permutations import api, io

    config = api.SampleConfig(num, nfe, partition, strategy, beam_width, api.parse_given(given), batch_size)
    model = io.load_model(model_file, run.device)
    opts = pop_input(kwargs)
    api.check_sample(model, config, items_file is not None)
    items = None if items_file is None else io.load_rows(model, items_file, opts)[1]
    context = io.model_context(model, context_file, None)
    evidence = None if given_file is None else io.read_evidence(given_file, model.n)
    out = api.sample(model, config, items=items, context=context, seed=run.seed, evidence=evidence)
    if out.message:
        run.info(out.message)
    run.detail(out.throughput())
    write_orders(run, out.orderings.numpy(), model.item_names, out.extra)


@verb(group, "score", output="report", torch_options=True, advanced=ADVANCED_INPUT)
@click.argument("model_file", metavar="MODEL")
@click.argument("data", metavar="DATA|-")
@click.option("--nfe", default=None, metavar="K", help="Masked models: NFE of the sampler scored (default n).")
@nfe_options
@output_option("--scores", "scores_path",
              help="Also write per-permutation log-likelihoods (permutation-scores artifact).")
@click.option("--context", "context_file", default=None, metavar="FILE",
              help="Feature-conditioned models: 'context', one row per permutation.")
@input_options
def score(run, model_file, data, nfe, partition, scores_path, context_file, **kwargs):
    """Exact log-likelihood of permutations under a model's sampler (YAML summary)."""
    from cortexkit.tools.permutations import api, io

    opts = pop_input(kwargs)
    model = io.load_model(model_file, run.device)
    api.check_nfe(nfe, model, single=True)
    if model.context_shape is not None and context_file is None:
        io.model_context(model, None, None)  # the error, before reading the data
    orders, items = io.load_rows(model, data, opts)
    context = io.model_context(model, context_file, len(orders.orderings))
    lp, report = api.score(model, orders.orderings, nfe=nfe, partition=partition, items=items,
                           context=context, seed=run.seed)
    if scores_path:
        run.write_artifact({"log_likelihood": lp}, "permutation-scores", target=scores_path)
    run.write_report(report)


@verb(group, "encode", output="artifact", torch_options=False, advanced=ADVANCED_INPUT)
@click.argument("data", metavar="DATA|-")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default="insertion", show_default=True)
@click.option("--reference", default="identity", show_default=True, metavar="identity|borda|FILE")
@input_options
def encode(run, data, representation, reference, **kwargs):
    """Permutations -> digit codes (permutation-codes artifact)."""
    from cortexkit.tools.permutations import api, io

    orders = io.load_orders(data, pop_input(kwargs))
    ref = io.parse_reference(reference, orders.orderings.shape[1])
    tensors = api.encode(orders.orderings, representation, reference if ref is None else ref)
    run.write_artifact(tensors, "permutation-codes", metadata={"permutations.representation": representation})


@verb(group, "decode", output="artifact", torch_options=False)
@click.argument("data", metavar="CODES|-")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default=None,
              help="Code of a text input (artifacts carry their own).")
@click.option("--reference", default=None, metavar="identity|FILE",
              help="Reference of a text input (artifacts carry their own).")
def decode(run, data, representation, reference):
    """Digit codes -> permutations (permutations artifact)."""
    from cortexkit.formats.rankings import load_codes
    from cortexkit.formats.stdio import display_name
    from cortexkit.tools.permutations import api, io

    codes = load_codes(data, representation)
    n = codes.codes.shape[1]
    spec = reference or "identity"
    ref = codes.reference if codes.reference is not None else io.parse_reference(spec, n)
    ref = api.reference_order(spec if ref is None else ref, None, n)
    x = api.decode(codes.codes, codes.representation, ref, display_name(data))
    write_orders(run, x.numpy())


@verb(group, "evaluate", output="report", torch_options=True, advanced=ADVANCED_INPUT)
@click.argument("model_file", metavar="MODEL")
@click.argument("data", metavar="HELDOUT|-")
@click.option("--nfe", default=None, metavar="K[,K...]",
              help="NFEs to report NLL and sample statistics at (default n, or 1 for products).")
@nfe_options
@click.option("--samples", type=click.IntRange(min=0), default=10000, show_default=True,
              help="Samples drawn per NFE for validity, uniqueness and Kendall statistics.")
@click.option("--train", "train_file", default=None, metavar="FILE",
              help="Training permutations: adds the share of novel samples.")
@click.option("--context", "context_file", default=None, metavar="FILE",
              help="Feature-conditioned models: 'context', one row per held-out permutation.")
@input_options
def evaluate(run, model_file, data, nfe, partition, samples, train_file, context_file, **kwargs):
    """Held-out NLL, validity, uniqueness, novelty and Kendall statistics (YAML report)."""
    from cortexkit.tools.permutations import api, io

    opts = pop_input(kwargs)
    model = io.load_model(model_file, run.device)
    api.check_nfe(nfe, model)
    orders = io.load_rows(model, data, opts, items=False)[0]
    train = None
    if train_file:
        train_opts = api.replace(opts, split="train" if opts.split == "test" else opts.split)
        train = io.load_rows(model, train_file, train_opts, items=False)[0].orderings
    items = io.row_items(model, orders, data)
    context = io.model_context(model, context_file, len(orders.orderings))
    report = api.evaluate(model, orders.orderings, api.EvaluateConfig(nfe, partition, samples), items=items,
                          context=context, train=train, seed=run.seed, detail=run.detail)
    run.write_report(report)
