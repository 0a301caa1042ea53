"""Bone lengths by what the keypoints pin (issue 34's identifiability evidence, RESULTS section 14):
from a ``study_bone_split.py`` YAML (signed bone-length error per bone group of each variant) and its
template, the length error of every keypoint chain: a path parent -> ... -> child between two
joints that carry keypoints with no keypoint joint in between, its length the sum of its bones'
(the template's rest lengths weight each bone's error; second order against the truth's lengths).
A chain of one bone is a bone "spanned" in study_bone_split's sense; longer chains are pinned only
as a sum. Per variant: mean |error| over the chains, over the one-bone chains, and over the bone
groups on no chain. YAML on stdout.

    python benchmarks/fit_avatar/chain_errors.py benchmarks/fit_avatar/study_sigmaauto_primate_16.yaml --template benchmarks/fit_avatar/_primate/primate.glb > benchmarks/fit_avatar/chain_errors_primate_16.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml
from make_template import load_template



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("study", help="a study_bone_split.py YAML")
    ap.add_argument("--template", required=True)
    args = ap.parse_args()
    study = yaml.safe_load(Path(args.study).read_text())
    template = Path(args.template)
    mesh, tpl = load_template(template)
    names, parents = list(tpl.joint_names), list(tpl.parents)
    kp_joints = set(np.nonzero(tpl.keypoints_joint.abs().sum(0).numpy() > 0)[0].tolist())
    pos = tpl.joints.double().numpy()
    chains = []
    for j in sorted(kp_joints):       # walk up from each keypoint joint to the nearest keypoint ancestor
        path, p = [j], parents[j]
        while p >= 0 and p not in kp_joints:
            path.append(p)
            p = parents[p]
        if p >= 0:
            chains.append([p] + path[::-1])
    group_names = study["groups"]
    on_chain = set()
    out = {"study": args.study, "template": template.name,
           "chains": [" -> ".join(names[i] for i in c) for c in chains], "variants": {}}
    for name, v in study["variants"].items():
        signed = v["bone_error_signed"]
        errs, single = [], []
        for c in chains:
            lengths, e = [], []
            for a, b in zip(c[:-1], c[1:]):
                g = int(tpl.bone_group[b])
                if g < 0:
                    continue
                lengths.append(float(np.linalg.norm(pos[b] - pos[a])))
                e.append(signed[group_names[g]])
                on_chain.add(group_names[g])
            if lengths:
                err = float(np.dot(lengths, e) / np.sum(lengths))
                errs.append(err)
                if len(lengths) == 1:
                    single.append(err)
        off = [abs(x) for g, x in signed.items() if g not in on_chain]
        out["variants"][name] = {
            "chain_error_mean": float(np.mean(np.abs(errs))) if errs else None,
            "chain_error_max": float(np.max(np.abs(errs))) if errs else None,
            "one_bone_chain_error_mean": float(np.mean(np.abs(single))) if single else None,
            "groups_on_no_chain_error_mean": float(np.mean(off)) if off else None,
            "groups_on_no_chain": len(off), "bone_error_mean": v["bone_error_mean"],
            "chain_errors": {out["chains"][i]: round(e, 4) for i, e in enumerate(errs)}}
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
