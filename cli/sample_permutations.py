"""cortexkit sample-permutations: learn, score and sample distributions over permutations."""

from __future__ import annotations


import click

from cortexkit.cli.base import output_option, tool_group, verb
from cortexkit.cli.options import NONNEGATIVE, Count, POSITIVE, UNIT, Float, Size
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
ADVANCED_NET = ("item_prior", "smoothing", "weight_decay", "val_fraction", "patience", "val_nfe", "d_model", "layers",
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
@click.option("--item-prior", is_flag=True,
              help="--condition items: tie each item-id embedding with its popularity in DATA.")
@click.option("--head", type=click.Choice(["linear", "pointer"]), default="linear", show_default=True,
              help="ar lehmer: digit j points at a free item.")
@click.option("--context-encoder", type=click.Choice(["linear", "mlp"]), default="linear",
              show_default=True, help="mlp: one hidden layer (--context-hidden).")
@click.option("--context-hidden", type=Size(min=1, bytes=lambda h, p: 4.0 * h * h, what='units'), default=None, hidden=True,
              help="Hidden width of the mlp context encoder (default --ff).")
@click.option("--smoothing", type=NONNEGATIVE, default=0.5, show_default=True,
              help="product/rim: pseudo-counts added to every legal digit value.")
@click.option("--epochs", type=Size(min=1, seconds=1e-4, what='epochs'), default=100, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--lr", type=POSITIVE, default=1e-3, show_default=True)
@click.option("--weight-decay", type=NONNEGATIVE, default=1e-2, show_default=True)
@click.option("--val-fraction", type=Float(0, 0.9), default=0.1, show_default=True,
              help="Part of DATA held out to keep the best epoch (neural models).")
@click.option("--patience", type=click.IntRange(min=1), default=30, show_default=True,
              help="Stop after this many epochs without a better validation NLL.")
@click.option("--val-nfe", type=click.IntRange(min=1), default=None,
              help="mlm: keep the epoch with the best validation NLL at this NFE (default n).")
@click.option("--d-model", type=Size(min=4, bytes=lambda d, p: 4.0 * d * d, what='units'), default=64, show_default=True)
@click.option("--layers", type=Size(min=1, bytes=lambda n, p: 16.0 * (p.get('d_model') or 4) ** 2 * n, what='layers'), default=2, show_default=True)
@click.option("--heads", type=Size(min=1, bytes=lambda h, p: 4.0 * h * (p.get('d_model') or 4), what='heads'), default=4, show_default=True)
@click.option("--ff", type=Size(min=4, bytes=lambda f, p: 4.0 * f * (p.get('d_model') or 4), what='units'), default=128, show_default=True)
@click.option("--dropout", type=Float(0, 1, max_open=True), default=0.1, show_default=True)
@click.option("--group", default=None, metavar="TENSOR|COLUMN",
              help="Validation holds out whole groups: a tensor of DATA (users), or a table column.")
@input_options
def fit(run, data, kind, representation, reference, condition, context_file, item_prior, head, context_encoder,
        context_hidden, smoothing, epochs, batch_size, lr, weight_decay, val_fraction, patience, val_nfe,
        d_model, layers, heads, ff, dropout, group, **kwargs):
    """Fit a model to permutations (DATA -> permutation-model artifact)."""
    from cortexkit.tools.permutations import api, io
    from cortexkit.tools.permutations.model import CLASSICAL

    if kind in CLASSICAL:  # a closed-form fit: the network's options do not apply to it
        run.drop_options("condition", "context", "item-prior", "head", "context-encoder",
                         "context-hidden", "smoothing", "epochs", "batch-size", "lr", "weight-decay",
                         "val-fraction", "patience", "val-nfe", "d-model", "layers", "heads", "ff",
                         "dropout", "device", "threads")
    config = api.FitConfig(kind, representation, reference, condition, head, context_encoder, context_hidden,
                           smoothing, api.TrainConfig(epochs, batch_size, lr, weight_decay, val_fraction,
                                                        patience, val_nfe),
                           d_model, layers, heads, ff, dropout, has_context_file=context_file is not None,
                           item_prior=item_prior)
    orders, context = io.training_rows(data, api.replace(pop_input(kwargs), group=group), condition,
                                       context_file)
    for note in orders.notes:
        run.info(note)
    fitted = api.fit(config, orders.orderings,
                     reference=io.parse_reference(reference, orders.orderings.shape[1]), items=orders.items,
                     context=context, context_name=context_file, groups=orders.groups, seed=run.seed, device=run.device,
                     info=run.info, detail=run.detail, warn=run.warn,
                     progress=lambda it: run.progress(it, desc="epochs"))
    ran = (fitted.info or {}).get("epochs_run")
    if ran is not None:  # a neural model: say which limit ended its training
        run.stopped("fit", ran, epochs, "epochs", "completed" if ran >= epochs else "patience",
                    best_epoch=fitted.info.get("best_epoch"),
                    best_validation_nll=fitted.info.get("best_val_nll"))
    tensors, meta = api.model_tensors(fitted, orders.item_names)
    run.write_artifact(tensors, "permutation-model", metadata=meta)
    run.info(api.summary(fitted))


@verb(group, "sample", output="table", torch_options=True, advanced=ADVANCED_INPUT + ("batch_size", "mbr_samples", "beam_width", "partition"))
@click.argument("model_file", metavar="MODEL|-")
@click.option("-n", "--num", type=Count(bytes_each=16, what="permutations"), default=None,
              help="sample: how many permutations to draw (default 1000). beam: how many of the "
                   "best to keep (default 1, at most --beam-width). greedy: 1.")
@click.option("--nfe", type=click.IntRange(min=1), default=None,
              help="Forward passes of a masked model (default n; products use 1).")
@nfe_options
@click.option("--strategy", type=click.Choice(["sample", "greedy", "beam", "mbr"]), default="sample",
              show_default=True, help="sample: random draws. greedy: per-step argmax. beam: beam "
                                      "search for the most likely permutations (MAP-style). mbr: "
                                      "the ranking best on average under --metric over samples.")
@click.option("--metric", default=None, metavar="ndcg[@K]|footrule|spearman|kendall",
              help="--strategy mbr: the metric whose sample mean is maximised (default ndcg).")
@click.option("--mbr-samples", type=Size(min=1, bytes=16, what='samples'), default=None,
              help="--strategy mbr: draws per row the decision is taken from (default 256).")
@click.option("--beam-width", type=Size(min=1, bytes=16, what='beams'), default=None,
              help="--strategy beam: partial codes kept per step (default 16; 1 is greedy).")
@click.option("--given", default=None, metavar="I,J,...",
              help="Condition on a partial ranking: the top items in order (lehmer, fisher-yates, "
                   "inline, plackett-luce), or the order of the first r reference items (insertion; "
                   "with --items/--context, of any r items). Every row gets the same.")
@click.option("--given-file", "given_file", default=None, metavar="FILE",
              help="Per-row evidence: 'given' (rows, r) padded with -1, a table, or PrefLib .soi "
                   "orders; one --given per row (with --items/--context: row for row).")
@click.option("--items", "items_file", default=None, metavar="FILE",
              help="Conditional models: rows whose item ids to condition on (permutations artifact "
                   "with 'items', or a rating table); -n samples are drawn for each row.")
@click.option("--context", "context_file", default=None, metavar="FILE",
              help="Feature-conditioned models: 'context' rows; one sample per row (-n per row).")
@click.option("--batch-size", type=click.IntRange(min=1), default=65536, show_default=True)
@input_options
def sample(run, model_file, num, nfe, partition, strategy, metric, mbr_samples, beam_width, given, given_file,
           items_file, context_file, batch_size, **kwargs):
    """Draw permutations from a model, or decode its most likely ones (MODEL -> permutations)."""
    from cortexkit.tools.permutations import api, io

    config = api.SampleConfig(num, nfe, partition, strategy, beam_width, api.parse_given(given), batch_size,
                              metric, mbr_samples)
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


@verb(group, "encode", output="table", torch_options=False, advanced=ADVANCED_INPUT)
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


@verb(group, "decode", output="table", torch_options=False)
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
@click.option("--samples", type=Size(min=0, bytes=16, what='samples'), default=10000, show_default=True,
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
