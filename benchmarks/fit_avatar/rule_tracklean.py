"""RESULTS section 21's rule on hexapod.py --track-masks-lean-paired YAMLs: per plan the four masked tracks
(A B B A: lean, reference, reference, lean), (1) the lean / reference CPU ratio of the sums, (2) the MPJPE
difference in mm (lean - reference, first pair), the repeats, the load. Usage:
    python benchmarks/fit_avatar/rule_tracklean.py benchmarks/fit_avatar/results_{quadruped,hexapod}_tracklean16.yaml"""
import sys

import yaml

KEYS = ("track_masks_lean", "track_masks_reference", "track_masks_reference_2", "track_masks_lean_2")
for f in sys.argv[1:]:
    d = yaml.safe_load(open(f))
    row = d["rigs"][16]["avatar_masks"]
    t = {k: row[k] for k in KEYS}
    lean = t["track_masks_lean"]["cpu_s_per_frame"] + t["track_masks_lean_2"]["cpu_s_per_frame"]
    ref = t["track_masks_reference"]["cpu_s_per_frame"] + t["track_masks_reference_2"]["cpu_s_per_frame"]
    m_l, m_r = t["track_masks_lean"]["mpjpe_mm"], t["track_masks_reference"]["mpjpe_mm"]
    print(f, "template", d["template"])
    for k, v in t.items():
        print(f"  {k:26s} cpu {v['cpu_s_per_frame']:.3f} s/frame  mpjpe {v['mpjpe_mm']:.9f} mm  load {v['load_average_1_5_15']}")
    p1 = t["track_masks_lean"]["cpu_s_per_frame"] / t["track_masks_reference"]["cpu_s_per_frame"]
    p2 = t["track_masks_lean_2"]["cpu_s_per_frame"] / t["track_masks_reference_2"]["cpu_s_per_frame"]
    print(f"  (cost) lean / reference, sums {lean / ref:.3f} (pair 1 {p1:.3f}, pair 2 {p2:.3f}) -> {'met' if lean < ref else 'MISSED'}")
    same = all(t[k]["mpjpe_mm"] == m_l for k in KEYS)
    print(f"  (MPJPE) lean - reference {m_l - m_r:+.3g} mm -> {'met' if abs(m_l - m_r) <= 1e-6 else 'MISSED'}; "
          f"all four equal to the digit: {same}")
    print(f"  masked shape cpu {row['shape_cpu_s']:.1f} s, vertex {row['vertex_error_mm']:.3f} mm, "
          f"peak rss {t['track_masks_lean_2']['peak_rss_mb_so_far']:.0f} MB")
