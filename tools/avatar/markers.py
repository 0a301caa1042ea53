"""``shape --keypoint-offsets auto``: whether a keypoint map gets markers (per-keypoint offsets), and
at which weight. Torch-free, so ``--print-config`` resolves it without loading the model."""

from __future__ import annotations

# the weight of --keypoint-offsets auto, chosen from {100, 1000} on the hexapod and the Fox with vertex-set
# keypoints (mean track MPJPE -7.9 % and -6.7 % against off; 1000: -7.1 %, -5.8 %), benchmarks/fit_avatar RESULTS section 7
MARKERS_AUTO_WEIGHT = 100.0


def auto_keypoint_offsets(vertex_sets: list[str], n_keypoints: int | None = None) -> tuple[float, str]:
    """``--keypoint-offsets auto``: :data:`MARKERS_AUTO_WEIGHT` when some keypoint of the map is a
    vertex set (``vertex_sets``, their names), off when every keypoint is a joint (the model places a
    joint exactly, so a marker has nothing to absorb and fits noise). ``n_keypoints``: the map's
    size (None: the template's default map, its joints). Returns (weight, why)."""
    if vertex_sets:
        shown = ", ".join(vertex_sets[:4]) + (", ..." if len(vertex_sets) > 4 else "")
        return MARKERS_AUTO_WEIGHT, (f"auto -> {MARKERS_AUTO_WEIGHT:g}: {len(vertex_sets)} of {n_keypoints} "
                                     f"keypoints are vertex sets ({shown})")
    if n_keypoints is None:
        return 0.0, "auto -> off: no keypoint map, the keypoints are the template's joints"
    return 0.0, f"auto -> off: all {n_keypoints} keypoints are joints"


def template_vertex_sets(template) -> list[str]:
    """Names of the template's keypoints defined as vertex sets."""
    rows = (template.keypoints_vertex.abs().sum(1) > 0).tolist()
    return [name for name, is_set in zip(template.keypoint_names, rows) if is_set]


def vertex_set_keypoints(spec) -> tuple[list[str], int]:
    """(names of the keypoints a keypoint map defines as vertex sets, the map's number of keypoints),
    from a map as :func:`~cortexkit.tools.avatar.model.parse_keypoint_map` takes it (YAML already
    loaded, optionally under 'keypoints:'); from its structure only (no template, nothing checked)."""
    if isinstance(spec, dict) and isinstance(spec.get("keypoints"), dict):
        spec = spec["keypoints"]
    if not isinstance(spec, dict):
        return [], 0
    return [str(name) for name, entry in spec.items() if isinstance(entry, dict) and "vertices" in entry], len(spec)
