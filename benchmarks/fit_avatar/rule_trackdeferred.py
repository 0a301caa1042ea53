"""RESULTS section 18's rule on hexapod.py --track-masks-paired YAMLs: per plan the four masked tracks (A B B A),
(1) the deferred / section 15 CPU ratio of the sums, (2) the MPJPE ratio, the repeats, the load. Usage:
    python benchmarks/fit_avatar/rule_trackdeferred.py benchmarks/fit_avatar/results_{quadruped,hexapod}_trackdeferred16.yaml"""
import sys, yaml
for f in sys.argv[1:]:
    d = yaml.safe_load(open(f))
    row = d["rigs"][16]["avatar_masks"]
    t = {k: row[k] for k in ("track_masks_deferred", "track_masks_eager", "track_masks_eager_2", "track_masks_deferred_2")}
    dsum = t["track_masks_deferred"]["cpu_s_per_frame"] + t["track_masks_deferred_2"]["cpu_s_per_frame"]
    esum = t["track_masks_eager"]["cpu_s_per_frame"] + t["track_masks_eager_2"]["cpu_s_per_frame"]
    m_d, m_e = t["track_masks_deferred"]["mpjpe_mm"], t["track_masks_eager"]["mpjpe_mm"]
    print(f, "template", d["template"])
    for k, v in t.items():
        print(f"  {k:24s} cpu {v['cpu_s_per_frame']:.3f} s/frame  mpjpe {v['mpjpe_mm']:.6f}  load {v['load_average_1_5_15']}")
    print(f"  (1) cost ratio deferred/eager (sums) {dsum/esum:.3f}  pair1 {t['track_masks_deferred']['cpu_s_per_frame']/t['track_masks_eager']['cpu_s_per_frame']:.3f} pair2 {t['track_masks_deferred_2']['cpu_s_per_frame']/t['track_masks_eager_2']['cpu_s_per_frame']:.3f} -> {'met' if dsum < esum else 'MISSED'}")
    print(f"  (2) mpjpe ratio {m_d/m_e:.4f} -> {'met' if abs(m_d/m_e-1) <= 0.02 else 'MISSED'}; repeats identical: deferred {m_d == t['track_masks_deferred_2']['mpjpe_mm']}, eager {m_e == t['track_masks_eager_2']['mpjpe_mm']}")
    print(f"  masked shape cpu {row['shape_cpu_s']:.1f} s, vertex {row['vertex_error_mm']:.3f} mm, track (no masks) {row['track_mpjpe_mm']:.3f}, peak rss {row['track_masks_deferred_2']['peak_rss_mb_so_far']:.0f} MB, sigma {row['sigma']}")
