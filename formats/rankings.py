"""Permutation data from outside: PrefLib .soc/.soi, text orders, MovieLens rating tables.

Everything becomes a table of **orderings**: row ``r`` lists 0-based item indices, most preferred
first. A **ranking** is the inverse (the position of each item); text files may hold either
(``as_="rankings"`` inverts them). Bad rows are rejected with a message naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from cortexkit.formats.errors import CortexError

PARTIAL = ("error", "drop", "shuffle")


@dataclass
class Orders:
    """``orderings`` ``(m, n)`` int64; optional ``item_names`` (n labels) and per-row ``items``
    ``(m, n)`` (e.g. movie ids whose local index is the value in ``orderings``) and ``ratings``."""

    orderings: np.ndarray
    item_names: list[str] | None = None
    items: np.ndarray | None = None
    ratings: np.ndarray | None = None
    users: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    groups: np.ndarray | None = None  # (m,) int64 group of each row (fit --group)


def check_orderings(x: np.ndarray, name: str, rows: list[int] | None = None, what: str = "row") -> None:
    """Every row must be a permutation of 0..n-1; the first bad row is named."""
    if x.ndim != 2:
        raise CortexError(f"{name}: expected a (count, n) table of permutations, got shape {list(x.shape)}")
    m, n = x.shape
    if m == 0:
        raise CortexError(f"{name}: holds no permutations")
    label = (lambda r: f"{what} {rows[r]}") if rows is not None else (lambda r: f"{what} {r + 1}")
    outside = (x < 0) | (x >= n)
    if outside.any():
        r, c = map(int, np.argwhere(outside)[0])
        raise CortexError(f"{name}: {label(r)} has item {int(x[r, c])} outside 0..{n - 1} "
                          f"(n = {n} from the row length)")
    srt = np.sort(x, axis=1)
    bad = (srt != np.arange(n)).any(axis=1)
    if bad.any():
        r = int(np.argmax(bad))
        values, counts = np.unique(x[r], return_counts=True)
        dup = values[counts > 1]
        missing = sorted(set(range(n)) - set(x[r].tolist()))
        raise CortexError(f"{name}: {label(r)} is not a permutation: item {int(dup[0])} repeats and "
                          f"item {missing[0]} is missing")


def invert_rows(x: np.ndarray) -> np.ndarray:
    inv = np.empty_like(x)
    np.put_along_axis(inv, x, np.broadcast_to(np.arange(x.shape[1]), x.shape), axis=1)
    return inv


# ----------------------------------------------------------------------------------------------
# text


def read_text_orders(data: bytes, name: str, as_: str = "orderings", base: str = "auto") -> Orders:
    """CSV or whitespace-separated integers, one permutation per line; '#' comments and a
    non-numeric header line are skipped. ``base``: ``0``, ``1`` or ``auto`` (1-based when no 0
    appears and the largest item equals n)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CortexError(f"{name}: not UTF-8 text (expected permutations, one per line)") from None
    rows, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f for f in re.split(r"[,\s;]+", line) if f]
        try:
            rows.append([int(f) for f in fields])
        except ValueError:
            if not rows and not lines:  # a header line
                continue
            raise CortexError(f"{name}: line {number}: '{line[:40]}' is not a list of integer items") from None
        lines.append(number)
    if not rows:
        raise CortexError(f"{name}: holds no permutations")
    n = len(rows[0])
    for row, number in zip(rows, lines):
        if len(row) != n:
            raise CortexError(f"{name}: line {number} has {len(row)} items, the first row has {n} "
                              "(ragged rows; every permutation needs the same n)")
    x = np.asarray(rows, dtype=np.int64)
    if base == "auto":
        base = "1" if x.min() >= 1 and x.max() == n else "0"
    if base == "1":
        x = x - 1
    check_orderings(x, name, lines, what="line")
    if as_ == "rankings":
        x = invert_rows(x)
    return Orders(x)


# ----------------------------------------------------------------------------------------------
# PrefLib


def read_preflib(data: bytes, name: str, partial: str = "error", rng: np.random.Generator | None = None) -> Orders:
    """PrefLib ordinal data (.soc complete, .soi incomplete strict orders; new and old layout).

    Lines ``count: o1,o2,...`` (1-based items, most preferred first). Ties (``{a,b}``) are not
    strict orders and are rejected. ``partial`` decides what happens to incomplete orders:
    ``error``, ``drop`` them, or ``shuffle`` (append the missing items in a random order).
    """
    n, names, orders, lines, counts = _parse_preflib(data, name)
    rows, row_lines, notes = [], [], []
    dropped = 0
    rng = rng or np.random.default_rng(0)
    for order, number, count in zip(orders, lines, counts):
        if len(order) < n:
            if partial == "error":
                raise CortexError(f"{name}: line {number} ranks {len(order)} of {n} items; pass "
                                  "--partial drop or --partial shuffle for incomplete orders")
            if partial == "drop":
                dropped += count
                continue
            missing = np.array(sorted(set(range(n)) - set(order)))
            for _ in range(count):
                rows.append(order + rng.permutation(missing).tolist())
                row_lines.append(number)
            continue
        rows.extend([order] * count)
        row_lines.extend([number] * count)
    if dropped:
        notes.append(f"dropped {dropped} incomplete orders")
    if not rows:
        raise CortexError(f"{name}: no complete orders left (all were dropped)")
    x = np.asarray(rows, dtype=np.int64)
    check_orderings(x, name, row_lines, what="line")
    labels = [names.get(k + 1, str(k + 1)) for k in range(n)] if names else None
    return Orders(x, item_names=labels, notes=notes)


def read_preflib_partial(data: bytes, name: str) -> tuple[int, np.ndarray]:
    """The number of items ``n`` of a PrefLib file (.soi or .soc) and the top items of each of
    its orders, repeated by its count: ``(rows, r_max)`` int64, 0-based, padded with -1 (per-row
    evidence)."""
    n, _, orders, _, counts = _parse_preflib(data, name)
    counts = [max(0, c) for c in counts]
    width = max(len(order) for order in orders)
    out = np.full((sum(counts), width), -1, dtype=np.int64)
    row = 0
    for order, count in zip(orders, counts):
        out[row:row + count, :len(order)] = order
        row += count
    return n, out


def _parse_preflib(data: bytes, name: str):
    """``(n, names, orders, line numbers, counts)`` of a PrefLib file, each order checked
    (items in 1..n, none repeated), complete or not."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CortexError(f"{name}: not UTF-8 text, so not a PrefLib file") from None
    names: dict[int, str] = {}
    n = None
    orders, lines, counts = [], [], []
    raw_lines = text.splitlines()
    old_layout = bool(raw_lines) and not raw_lines[0].startswith("#")
    body_start = 0
    if old_layout:  # legacy: n, n name lines, "voters,sum,unique", then "count,o1,..."
        try:
            n = int(raw_lines[0].strip())
            for k in range(1, n + 1):
                idx, label = raw_lines[k].split(",", 1)
                names[int(idx)] = label.strip()
            body_start = n + 2
        except (ValueError, IndexError):
            raise CortexError(f"{name}: not a PrefLib file (no '# NUMBER ALTERNATIVES' header "
                              "and not the legacy layout)") from None
    for number, line in enumerate(raw_lines[body_start:], start=body_start + 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*NUMBER ALTERNATIVES:\s*(\d+)", line)
            if m:
                n = int(m.group(1))
            m = re.match(r"#\s*ALTERNATIVE NAME (\d+):\s*(.*)", line)
            if m:
                names[int(m.group(1))] = m.group(2).strip()
            continue
        if "{" in line:
            raise CortexError(f"{name}: line {number} has tied items ({line[:40]}); only strict "
                              "orders (.soc/.soi) are permutations")
        if ":" in line:
            count_text, order_text = line.split(":", 1)
        else:
            count_text, order_text = line.split(",", 1)
        try:
            count = int(count_text)
            order = [int(v) - 1 for v in order_text.replace(",", " ").split()]
        except ValueError:
            raise CortexError(f"{name}: line {number}: '{line[:40]}' is not 'count: item,item,...'") from None
        orders.append(order)
        lines.append(number)
        counts.append(count)
    if n is None:
        raise CortexError(f"{name}: no '# NUMBER ALTERNATIVES: n' header")
    if not orders:
        raise CortexError(f"{name}: holds no orders")
    for order, number in zip(orders, lines):
        bad = [v for v in order if not 0 <= v < n]
        if bad:
            raise CortexError(f"{name}: line {number} has item {bad[0] + 1} outside 1..{n}")
        if len(set(order)) != len(order):
            dup = next(v for v in order if order.count(v) > 1)
            raise CortexError(f"{name}: line {number} is not a permutation: item {dup + 1} repeats")
    return n, names, orders, lines, counts


# ----------------------------------------------------------------------------------------------
# MovieLens-style ratings


def read_rating_table(data: bytes, name: str) -> np.ndarray:
    """``(rows, 3)`` float64 of (user, item, rating) from u.data (tab/space separated, no
    header) or a ratings.csv with a header (userId,movieId,rating[,timestamp])."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CortexError(f"{name}: not UTF-8 text, so not a rating table") from None
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f for f in re.split(r"[,\t ]+|::", line) if f]
        if len(fields) < 3:
            raise CortexError(f"{name}: line {number} has {len(fields)} fields; expected user, item, rating")
        try:
            user, item, rating = int(fields[0]), int(fields[1]), float(fields[2])
        except ValueError:
            if not out:
                continue  # header
            raise CortexError(f"{name}: line {number}: '{line[:40]}' is not user, item, rating") from None
        if not np.isfinite(rating):
            raise CortexError(f"{name}: line {number} has rating {fields[2]} (NaN or infinite); "
                              "remove or fill it")
        out.append((user, item, rating))
    if not out:
        raise CortexError(f"{name}: holds no ratings")
    return np.asarray(out, dtype=np.float64)


def split_users(users: np.ndarray, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean per distinct user (sorted): True = test. Deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(users))
    test = np.zeros(len(users), dtype=bool)
    test[order[: int(round(len(users) * test_fraction))]] = True
    return test


def ratings_to_orders(table: np.ndarray, n: int, *, min_ratings: int = 100, split: str = "all",
                      test_fraction: float = 0.2, split_seed: int = 0,
                      rng: np.random.Generator | None = None, draws: int = 1) -> Orders:
    """Per-user rankings of ``n`` movies from a ratings table ``(rows, 3)``.

    Movies with at least ``min_ratings`` ratings are kept; each user with at least ``n`` of them
    gives ``draws`` rows, each a random subset of ``n`` rated movies ordered by rating, ties broken
    at random per draw. Local item ``k`` of a row is the ``k``-th most popular of its movies
    (popularity counted on training users only), so the identity reference is popularity order.
    Users are split ``1 - test_fraction`` / ``test_fraction`` by ``split_seed``.
    Returns orderings over local items, ``items`` (movie ids) and ``ratings`` ``(m, n)``.
    """
    rng = rng or np.random.default_rng(0)
    users_all = np.unique(table[:, 0].astype(np.int64))
    is_test = dict(zip(users_all.tolist(), split_users(users_all, test_fraction, split_seed).tolist()))
    movie, counts = np.unique(table[:, 1].astype(np.int64), return_counts=True)
    keep = set(movie[counts >= min_ratings].tolist())
    train_rows = np.array([not is_test[int(u)] for u in table[:, 0]])
    pop_movies, pop_counts = np.unique(table[train_rows, 1].astype(np.int64), return_counts=True)
    popularity = dict(zip(pop_movies.tolist(), pop_counts.tolist()))
    by_user: dict[int, list[tuple[int, float]]] = {}
    for user, item, rating in table:
        if int(item) in keep:
            by_user.setdefault(int(user), []).append((int(item), float(rating)))
    orders, items, ratings, users = [], [], [], []
    for user in sorted(by_user):
        if split != "all" and is_test[user] != (split == "test"):
            continue
        rated = by_user[user]
        if len(rated) < n:
            continue
        for _ in range(draws):
            pick = rng.choice(len(rated), size=n, replace=False)
            movies = np.array([rated[p][0] for p in pick])
            stars = np.array([rated[p][1] for p in pick])
            # local index = popularity rank among the chosen movies (ties by movie id)
            pop = np.array([popularity.get(int(m), 0) for m in movies])
            local = np.lexsort((movies, -pop))
            movies, stars = movies[local], stars[local]
            order = np.lexsort((rng.random(n), -stars))  # by rating, ties at random
            orders.append(order)
            items.append(movies)
            ratings.append(stars)
            users.append(user)
    if not orders:
        raise CortexError(f"no user has {n} rated movies with at least {min_ratings} ratings each "
                          f"in split '{split}'; lower --n-items or --min-ratings")
    return Orders(np.asarray(orders, dtype=np.int64), items=np.asarray(items, dtype=np.int64),
                  ratings=np.asarray(ratings, dtype=np.float32), users=np.asarray(users, dtype=np.int64),
                  notes=[f"{len(set(users))} users, {len(keep)} movies with >= {min_ratings} ratings"])


def sniff_kind(data: bytes, name: str) -> str:
    """``artifact``, ``preflib``, ``ratings`` or ``text`` from the bytes and the file name."""
    lower = name.lower()
    if len(data) >= 9 and data[8:9] == b"{":
        return "artifact"
    if lower.endswith((".soc", ".soi", ".toc", ".toi")):
        return "preflib"
    if lower.endswith(("u.data", ".base", ".test", "ratings.csv", "ratings.dat")):
        return "ratings"
    head = data[:200].decode("utf-8", "replace")
    if head.startswith("# FILE NAME") or "NUMBER ALTERNATIVES" in head:
        return "preflib"
    return "text"


# ----------------------------------------------------------------------------------------------
# every input the permutation tools read, from a path or stdin


FORMATS = ("auto", "artifact", "preflib", "text", "movielens", "table")


@dataclass
class OrderOptions:
    """How to read permutation data (the ``--format``, ``--as``, ... options of the commands).

    ``fmt`` one of :data:`FORMATS`; ``as_`` ``orderings`` or ``rankings``; ``base`` ``auto``,
    ``0`` or ``1`` (text and tables); ``partial`` for PrefLib ``.soi``; the rest pick and split
    the rankings of a MovieLens rating table (see :func:`ratings_to_orders`)."""

    fmt: str = "auto"
    as_: str = "orderings"
    base: str = "auto"
    partial: str = "error"
    n_items: int = 10
    min_ratings: int = 100
    split: str = "all"
    test_fraction: float = 0.2
    split_seed: int = 0
    draws: int = 1
    group: str | None = None  # fit --group: a tensor (artifacts), column (tables) or "users"


def sniff_orders(data: bytes, name: str) -> str:
    """The :data:`FORMATS` entry of input bytes: :func:`sniff_kind`, plus ``table`` for NPY,
    NPZ and ``table`` artifacts (integer orderings, one row per permutation)."""
    from cortexkit.formats import tables as raw

    if data.startswith((raw.NPY_MAGIC, raw.ZIP_MAGIC)):
        return "table"
    kind = sniff_kind(data, name)
    if kind == "artifact":
        from cortexkit.formats.artifact import KIND, decode_header

        try:
            _, meta, _ = decode_header(data, name)
        except CortexError:
            return "artifact"  # the artifact reader names what is wrong
        return "table" if meta.get(KIND) == "table" else "artifact"
    return "movielens" if kind == "ratings" else kind


def table_orders(data: bytes, name: str, as_: str = "orderings", base: str = "auto",
                 group: str | None = None) -> Orders:
    """Orderings from a table (CSV, NPY, NPZ or ``table`` artifact) of integer columns: each
    row one permutation, column j the item at position j (or, ``as_="rankings"``, the position
    of item j); ``base`` as for text."""
    from cortexkit.formats.table import parse_table

    table = parse_table(data, name)
    groups = None
    if group is not None:
        table.require([group])
        groups = table.codes(group)[0]
        table = table.drop([group])
    coded = [c for c in table.names if table.is_categorical(c)]
    if coded:
        raise CortexError(f"{name}: column '{coded[0]}' is categorical; orderings need integer "
                          "item indices in every column")
    x = table.matrix(dtype=np.float64)
    if not np.array_equal(x, np.round(x)):
        r, c = map(int, np.argwhere(x != np.round(x))[0])
        raise CortexError(f"{name}: row {r + 1}, column '{table.names[c]}' holds {x[r, c]}, "
                          "not an integer item index")
    x = x.astype(np.int64)
    if x.size and base == "auto":
        base = "1" if x.min() >= 1 and x.max() == x.shape[1] else "0"
    if base == "1":
        x = x - 1
    check_orderings(x, name)
    return Orders(invert_rows(x) if as_ == "rankings" else x, groups=groups)


def load_orders(source, options: OrderOptions | None = None) -> Orders:
    """Orders (orderings and extras) from a path or stdin (``-``) in any supported format."""
    from cortexkit.formats.stdio import display_name, read_bytes

    opts = options or OrderOptions()
    name = display_name(source)
    data = read_bytes(source)
    fmt = opts.fmt
    if fmt == "auto":
        fmt = sniff_orders(data, name)
        if fmt == "text" and opts.group is not None:  # a CSV with a group column: a table
            fmt = "table"
    orders = _load(data, name, fmt, opts)
    if opts.group is not None and orders.groups is None:
        if orders.users is not None and opts.group == "users":
            orders.groups = np.asarray(orders.users, dtype=np.int64)
        else:
            raise CortexError(f"{name}: --group {opts.group}: no such tensor or column (give a 'users'-like "
                              "tensor of a permutations artifact, a table column, or 'users' for rating tables)")
    return orders


def _load(data: bytes, name: str, fmt: str, opts: OrderOptions) -> Orders:
    from cortexkit.formats.artifact import check_kind, decode

    if fmt not in ("text", "table") and opts.as_ == "rankings" and fmt != "artifact":
        raise CortexError(f"{name}: --as rankings applies to text and artifacts; {fmt} input holds orderings")
    if fmt == "table":
        return table_orders(data, name, opts.as_, opts.base, opts.group)
    if fmt == "artifact":
        art = decode(data, name, "np")
        check_kind(art, "permutations", schema=True)
        x = np.asarray(art.tensor("orderings"), dtype=np.int64)
        check_orderings(x, name)
        if opts.as_ == "rankings":
            x = invert_rows(x)
        names = art.meta_json("permutations.items")
        extra = {k: np.asarray(art.tensors[k]) for k in ("items", "ratings", "users") if k in art.tensors}
        if opts.group is not None and opts.group in art.tensors:
            groups = np.asarray(art.tensors[opts.group])
            if groups.shape != (len(x),) or groups.dtype.kind not in "iub":
                raise CortexError(f"{name}: --group {opts.group}: expected an integer tensor of shape "
                                  f"({len(x)},), got {groups.dtype} {list(groups.shape)}")
            extra["groups"] = groups.astype(np.int64)
        return Orders(x, item_names=names, **extra)
    if fmt == "preflib":
        return read_preflib(data, name, opts.partial, np.random.default_rng(opts.split_seed))
    if fmt == "movielens":
        table = read_rating_table(data, name)
        return ratings_to_orders(table, opts.n_items, min_ratings=opts.min_ratings,
                                 split=opts.split, test_fraction=opts.test_fraction,
                                 split_seed=opts.split_seed, draws=opts.draws,
                                 rng=np.random.default_rng(opts.split_seed + 1))
    return read_text_orders(data, name, opts.as_, opts.base)


def read_reference(spec: str, n: int) -> np.ndarray:
    """A reference ordering ``(n,)`` int64 from a file (a text line or a permutations
    artifact's first row); the message names the option."""
    opts = OrderOptions(n_items=n, min_ratings=1)
    try:
        ref = load_orders(spec, opts).orderings[0]
    except CortexError as exc:
        raise CortexError(f"--reference {spec}: {exc} (use identity, borda or a file holding one ordering)") from None
    if len(ref) != n:
        raise CortexError(f"--reference {spec}: holds an ordering of {len(ref)} items, the data has n = {n}")
    return np.asarray(ref, dtype=np.int64)


@dataclass
class Codes:
    """Digit codes ``(count, n)`` int64 with their representation and reference ``(n,)`` (None:
    the caller's default)."""

    codes: np.ndarray
    representation: str | None
    reference: np.ndarray | None


def load_codes(source, representation: str | None = None) -> Codes:
    """A permutation-codes artifact, or text codes (one row of integer digits per line)."""
    from cortexkit.formats.artifact import check_kind, decode
    from cortexkit.formats.stdio import display_name, read_bytes

    name = display_name(source)
    raw = read_bytes(source)
    if sniff_kind(raw, name) == "artifact":
        art = decode(raw, name, "np")
        check_kind(art, "permutation-codes", schema=True)
        code = np.asarray(art.tensor("codes"), dtype=np.int64)
        rep = art.metadata.get("permutations.representation")
        if representation and representation != rep:
            raise CortexError(f"{name}: holds {rep} codes, not {representation}")
        return Codes(code, rep, np.asarray(art.tensor("reference"), dtype=np.int64))
    if representation is None:
        raise CortexError(f"{name}: text codes need --representation")
    rows = []
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            try:
                rows.append(([int(v) for v in line.replace(",", " ").split()], number))
            except ValueError:
                raise CortexError(f"{name}: line {number} is not a list of integer digits") from None
    if not rows:
        raise CortexError(f"{name}: holds no codes")
    n = len(rows[0][0])
    for row, number in rows:
        if len(row) != n:
            raise CortexError(f"{name}: line {number} has {len(row)} digits, the first has {n}")
    return Codes(np.asarray([r for r, _ in rows], dtype=np.int64), representation, None)


def read_context(source, rows: int | None):
    """The ``context`` tensor ``(rows, m, d)`` float32 of a safetensors file (any kind), checked
    before work: float, 3-D, ``rows`` rows when given, finite."""
    import torch

    from cortexkit.formats.artifact import read_artifact

    art = read_artifact(source, None, framework="pt")
    ctx = art.tensor("context")
    if not torch.is_floating_point(ctx) or ctx.dim() != 3:
        raise CortexError(f"{art.source}: 'context' must be a float tensor (rows, tokens, features), "
                          f"got {str(ctx.dtype).replace('torch.', '')} of shape {tuple(ctx.shape)}")
    if rows is not None and len(ctx) != rows:
        raise CortexError(f"{art.source}: holds {len(ctx)} context rows, the permutations {rows}; "
                          "give one context row per permutation, in the same order")
    finite = torch.isfinite(ctx).flatten(1).all(1)
    if not finite.all():
        row = int((~finite).nonzero()[0, 0])
        raise CortexError(f"{art.source}: context row {row + 1} holds NaN or infinite values")
    return ctx.float()
