"""The decision rule of RESULTS.md ("Study: generalisation fixes") applied to study.py's files:

    python benchmarks/tokenize_eeg/decide_generalisation.py benchmarks/tokenize_eeg/results/study/[AB]_gen_s[01].yaml [...combo files]

Every variant of a file appears twice: at its last epoch (NAME) and at its best-validation epoch
(NAME+best). A cell = (split, seed); its figures = test time NMSE / the same-seed k-means floor's and
tokens-only amplitude NMSE / the better of the floor's two codebooks. Prints the per-cell table, then
for every candidate against ``base`` (last epoch): mean time-ratio drop (rule 1: >= 0.03), cells lower
(rule 2: >= 3 of 4), mean amplitude ratio (rule 3: not higher), CPU seconds ratio (rule 4: <= 2x).

    python benchmarks/tokenize_eeg/decide_generalisation.py --rule warm-start benchmarks/tokenize_eeg/results/study/[AB]_warm_s[01].yaml

applies the warm-start study's rule instead (RESULTS.md "Study: start training at the k-means
floor"): time ratio lower by >= 0.05 in >= 3 of 4 cells, mean amplitude ratio not higher, CPU <= 1.5x.
``--rule warm-length`` applies the 2026-12-07 study's rule (RESULTS.md "Study: length, amplitude side
and warm-start k-means"): mean time drop >= 0.03, lower in >= 3 of 4 cells, mean amplitude ratio not
higher, CPU <= 8x. ``--rule augment`` applies the augmentation study's (RESULTS.md "Study: more
distinct training windows"): the same four with CPU <= 2.3x; a variant that trains on windows of its
own (``stride``) is scored against the floor fitted on those windows in its cell. ``--rule
decoder-lr-length`` applies the eeg17 study's (RESULTS.md "Study: decoder depth, peak learning rate and
length at today's defaults"): mean time drop >= 0.02, lower in >= 3 of 4 cells, mean amplitude ratio
up by <= 0.01, CPU <= 2x; ``leaky`` (the crops before the validation-leak fix) is no candidate: it is
printed as the fix's effect (base - leaky). ``--rule amp-signal`` applies the eeg18 study's (RESULTS.md
"Study: the tokens-only amplitude"): mean amplitude ratio lower by >= 0.05 and lower in >= 3 of 4
cells; mean time ratio up by <= 0.03 and below 1 in every cell; CPU <= 1.5x; of the passing
candidates the one with the lowest mean over cells of max(time ratio, amplitude ratio) is adopted.
``--rule amp-head`` applies the eeg20 study's (RESULTS.md "Study: an amplitude head"): amp-signal's
rules and selection unchanged, and, for information only, each variant's mean amplitude ratio to the
k-means codebook read out by its clusters' mean |rfft| (``amplitude_nmse_cluster_mean``).
"""

import sys
from collections import defaultdict

import yaml

BASE = "base"
args = sys.argv[1:]
rule = "generalisation"
if args[:1] == ["--rule"]:
    rule, args = args[1], args[2:]
cells = defaultdict(dict)  # (split, seed) -> name -> (time ratio, amp ratio, cpu s, best epoch)
amp_matched = defaultdict(dict)  # (split, seed) -> name -> amp ratio to the cluster-mean read-out
for path in args:
    d = yaml.safe_load(open(path))
    floor = d["kmeans_floor"]
    for name, v in d["variants"].items():
        own = v.get("kmeans_floor", floor) if rule == "augment" else floor
        own_amp = min(own["amplitude_nmse_signal"], own["amplitude_nmse"])
        for label, part in ((name, v), (name + "+best", v.get("best"))):
            if part is None:
                continue
            if "amplitude_nmse_cluster_mean" in floor:
                amp_matched[(d["split"], d["seed"])][label] = (
                    part["test"]["amplitude_nmse_signal"] / floor["amplitude_nmse_cluster_mean"])
            cells[(d["split"], d["seed"])][label] = (
                part["test"]["time_nmse"] / own["time_nmse"],
                part["test"]["amplitude_nmse_signal"] / own_amp, v["train_cpu_seconds"],
                part.get("epoch", v["train"]["epochs"]),
                part["train_fit"]["time_nmse"] / own["time_nmse"])
names = []
for c in cells.values():
    names += [n for n in c if n not in names]
keys = sorted(cells)
print("| variant | " + " | ".join(f"{s}{seed} time / amp (epoch)" for s, seed in keys)
      + " | mean time | mean amp | mean train-fit time | mean CPU s |")
print("|---|" + "---|" * (len(keys) + 4))
mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
for n in names:
    got = [cells[k].get(n) for k in keys]
    if any(g is None for g in got):
        continue
    print(f"| {n} | " + " | ".join(f"{g[0]:.3f} / {g[1]:.3f} ({g[3]})" for g in got)
          + f" | {mean([g[0] for g in got]):.3f} | {mean([g[1] for g in got]):.3f} | "
          f"{mean([g[4] for g in got]):.3f} | {mean([g[2] for g in got]):.0f} |")
print()
base = [cells[k][BASE] for k in keys]
passing = []
for n in names:
    got = [cells[k].get(n) for k in keys]
    if n == BASE or any(g is None for g in got):
        continue
    if rule in ("decoder-lr-length", "amp-signal", "amp-head") and n.endswith("+best"):
        continue  # this rule decides on the last epoch only (the +best readings are in the table)
    if rule == "decoder-lr-length" and n.startswith("leaky"):
        print(f"{n} (crops before the leak fix, not a candidate): mean time base "
              f"{mean([b[0] for b in base]):.3f} vs {n} {mean([g[0] for g in got]):.3f} (base - {n} "
              f"{mean([b[0] for b in base]) - mean([g[0] for g in got]):+.3f}), amp "
              f"{mean([b[1] for b in base]):.3f} vs {mean([g[1] for g in got]):.3f}, base lower in "
              f"{sum(b[0] < g[0] for g, b in zip(got, base))}/{len(keys)}")
        continue
    drop = mean([b[0] for b in base]) - mean([g[0] for g in got])
    lower = sum(g[0] < b[0] for g, b in zip(got, base))
    amp = mean([g[1] for g in got]) - mean([b[1] for b in base])
    cpu = mean([g[2] for g in got]) / mean([b[2] for b in base])
    if rule == "warm-start":
        lower = sum(g[0] <= b[0] - 0.05 for g, b in zip(got, base))
        ok = [lower >= 3, amp <= 0, cpu <= 1.5]
        print(f"{n}: time drop {drop:+.3f}, lower by >= 0.05 in {lower}/{len(keys)} (1: {ok[0]}), "
              f"amp {amp:+.3f} (2: {ok[1]}), CPU {cpu:.2f}x (3: {ok[2]}) -> "
              f"{'PASSES' if all(ok) else 'fails'}")
        continue
    if rule in ("amp-signal", "amp-head"):
        amp_lower = sum(g[1] < b[1] for g, b in zip(got, base))
        below = sum(g[0] < 1.0 for g in got)
        worst = mean([max(g[0], g[1]) for g in got])
        ok = [-amp >= 0.05 and amp_lower >= 3, -drop <= 0.03 and below == len(keys), cpu <= 1.5]
        passing.append((worst, n)) if all(ok) else None
        print(f"{n}: amp {amp:+.3f}, lower in {amp_lower}/{len(keys)} (1: {ok[0]}); time {-drop:+.3f}, "
              f"below 1 in {below}/{len(keys)} (2: {ok[1]}); CPU {cpu:.2f}x (3: {ok[2]}); mean max(time, amp) "
              f"{worst:.3f} (base {mean([max(b[0], b[1]) for b in base]):.3f}) -> {'PASSES' if all(ok) else 'fails'}")
        continue
    if rule == "decoder-lr-length":
        ok = [drop >= 0.02, lower >= 3, amp <= 0.01, cpu <= 2.0]
    else:
        ok = [drop >= 0.03, lower >= 3, amp <= 0, cpu <= {"warm-length": 8.0, "augment": 2.3}.get(rule, 2.0)]
    print(f"{n}: time drop {drop:+.3f} (1: {ok[0]}), lower in {lower}/{len(keys)} (2: {ok[1]}), "
          f"amp {amp:+.3f} (3: {ok[2]}), CPU {cpu:.2f}x (4: {ok[3]}) -> "
          f"{'PASSES' if all(ok) else 'fails'}")
if rule == "amp-head":  # information: the amplitude ratio to k-means read out by cluster means
    for n in names:
        got = [amp_matched[k].get(n) for k in keys]
        if not n.endswith("+best") and all(g is not None for g in got):
            print(f"{n}: amplitude ratio to k-means' cluster-mean |rfft| read-out (information) "
                  + " / ".join(f"{g:.3f}" for g in got) + f", mean {mean(got):.3f}")
if rule in ("amp-signal", "amp-head"):
    print(f"adopted: {min(passing)[1]} (lowest mean max(time, amp) {min(passing)[0]:.3f})" if passing
          else "adopted: none (no candidate passes; no default changes)")
