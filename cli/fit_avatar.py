"""cortexkit fit-avatar: BigMaQ subject avatars and per-frame joint rotations from calibrated cameras."""

from __future__ import annotations

import os

import click

from cortexkit.cli.base import output_option, require_matplotlib, tool_group, verb
from cortexkit.cli.options import AutoFloat, AutoOffFloat, OutputPath, Regex, Size
from cortexkit.formats.errors import CortexError
from cortexkit.tools.avatar import schema as _schema  # noqa: F401  (registers the schemas checked on read)

group = tool_group(
    "fit-avatar",
    help="BigMaQ: fit a skinned template to one subject, then track per-frame joint rotations "
         "from calibrated cameras (triangulate, shape, track, export, render, synth, evaluate).")

UNITS = click.Choice(["mm", "cm", "m"])
MAX_RING = 256  # virtual cameras of --rig ring:N (the size guard of synth: every camera renders every frame)

def _views(run, inputs, calibration, units, camera_names, masks=None):
    """The verbs' views: an artifact or 2D files (+ --calibration), with --masks files cropped in."""
    from cortexkit.tools.avatar.inputs import read_views, with_file_masks

    return with_file_masks(read_views(inputs, calibration, units, camera_names, run.read_artifact, run.warn),
                           masks, 64)


template_units = click.option("--template-units", type=UNITS, default="m", show_default=True,
                              help="Length unit of the glTF template (glTF means m; many assets are cm).")
calibration_opts = [
    click.option("--calibration", type=click.Path(dir_okay=False), default=None,
                 help="Anipose calibration.toml, when the inputs are per-camera 2D files or a folder of them."),
    click.option("--units", type=UNITS, default="mm", show_default=True, help="Length unit of the calibration."),
    click.option("--camera-names", default=None, help="Camera of each 2D file, comma-separated "
                 "(default: the calibration name found in each file name)."),
]


def _with(options):
    def deco(f):
        for o in reversed(options):
            f = o(f)
        return f
    return deco


@verb(group, "synth", output="artifact", torch_options=True, advanced=("bone_sd", "offset_size", "radius"))
@click.argument("template")
@template_units
@click.option("--clip", default=None, help="Animation clip of the glTF (default: random poses).")
@click.option("--frames", type=click.IntRange(min=1), default=None, help="Keep at most this many frames.")
@click.option("--rig", default="ring:16", show_default=True, help="ring:N virtual cameras, or a calibration.toml.")
@click.option("--units", type=UNITS, default="mm", show_default=True, help="Length unit of a --rig calibration.")
@click.option("--noise", type=click.FloatRange(min=0), default=2.0, show_default=True, help="2D noise sd (px).")
@click.option("--dropout", type=click.FloatRange(0, 1), default=0.2, show_default=True, help="Fraction of detections removed.")
@click.option("--outliers", type=click.FloatRange(0, 1), default=0.03, show_default=True, help="Fraction moved 20-80 px.")
@click.option("--crop", type=Size(min=8, bytes=lambda c, p: 4.0 * c * c, what='pixels per side'), default=64, show_default=True, help="Mask crop size (px).")
@click.option("--masks/--no-masks", default=True, show_default=True, help="Render silhouettes.")
@click.option("--bone-sd", type=click.FloatRange(min=0), default=0.08, show_default=True, help="Hidden bone-scale log sd.")
@click.option("--offset-size", type=click.FloatRange(min=0), default=0.03, show_default=True,
              help="Hidden offsets, fraction of body length.")
@click.option("--radius", type=click.FloatRange(min=0, min_open=True), default=2.2, show_default=True,
              help="Virtual ring radius, body lengths.")
@click.option("--keypoints", type=click.Path(dir_okay=False), default=None, help="Keypoint map YAML.")
@click.option("--symmetry", type=click.Path(dir_okay=False), default=None,
              help="Symmetry YAML (mirror axis, vertex and bone pairs, bone groups).")
@click.option("--image-dir", type=click.Path(file_okay=False), default=None,
              help="Also write full-size colour renders of a hidden per-vertex colouring, DIR/<camera>/NNNNN.png.")
@click.option("--mask-dir", type=click.Path(file_okay=False), default=None,
              help="Also write full-size masks, DIR/<camera>/NNNNN.png.")
def synth(run, template, template_units, clip, frames, rig, units, noise, dropout, outliers, crop, masks,
          bone_sd, offset_size, radius, keypoints, symmetry, image_dir, mask_dir):
    """Synthetic views of a hidden individual: 2D keypoints with noise, dropout, outliers, masks, truth."""
    from cortexkit.tools.avatar.api import synth_views
    from cortexkit.tools.avatar.io import VIEWS
    from cortexkit.tools.avatar.synth import SynthConfig

    if rig.startswith("ring:"):
        count = rig[len("ring:"):]
        if not count.isdigit() or not 1 <= int(count) <= MAX_RING:
            raise CortexError(f"--rig {rig}: ring:N takes a whole number of virtual cameras N from 1 "
                              f"to {MAX_RING}")
    from cortexkit.tools.avatar.inputs import read_template

    tpl, _, clips, factor = read_template(template, template_units, keypoints, None, None, symmetry, run.read_artifact)
    if clip is not None and clip not in clips:
        raise CortexError(f"--clip {clip}: {template} has clips {', '.join(clips) or 'none'}")
    rig_cal = None
    if not rig.startswith("ring:"):
        from cortexkit.formats.calibration import read_calibration

        rig_cal = read_calibration(rig, units)
    config = SynthConfig(noise=noise, dropout=dropout, outliers=outliers, bone_sd=bone_sd,
                         offset_size=offset_size, crop=crop, masks=masks, seed=run.seed)
    tensors, meta = synth_views(tpl, clips[clip]["world"] if clip else None, factor, rig, rig_cal, config,
                                frames=frames, radius=radius, image_dir=image_dir, mask_dir=mask_dir)
    run.write_artifact(tensors, VIEWS, metadata=meta)


@verb(group, "triangulate", output="table", advanced=("max_pairs",))
@click.argument("inputs", nargs=-1)
@_with(calibration_opts)
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Inlier reprojection error (px).")
@click.option("--max-pairs", type=click.IntRange(min=1), default=120, show_default=True,
              help="Camera pairs tried per hard point.")
def triangulate(run, inputs, calibration, units, camera_names, threshold, max_pairs):
    """Robust confidence-weighted DLT: 2D keypoints of calibrated cameras -> 3D table (mm)."""
    from cortexkit.formats.table import write_table
    from cortexkit.tools.avatar.triangulate import TriangulationConfig, points_table

    views = _views(run, inputs, calibration, units, camera_names)
    columns = points_table(views["cameras"], views["keypoints"].double().numpy(), views["confidence"].numpy(),
                           views["keypoint_names"], TriangulationConfig(threshold=threshold, max_pairs=max_pairs))
    from cortexkit.formats.table import Table, to_csv

    if str(run.output).lower().endswith(".csv"):  # a CSV for spreadsheets and pandas
        from cortexkit.formats.stdio import write_bytes

        write_bytes(run.output, to_csv(Table(columns)))
    else:
        write_table(run.output, Table(columns), producer=run.producer, config=run.config)


fit_opts = [
    click.option("--keypoints", type=click.Path(dir_okay=False), default=None,
                 help="Keypoint map YAML (name: JOINT, {joint: JOINT} or {vertices, weights})."),
    click.option("--symmetry", type=click.Path(dir_okay=False), default=None,
                 help="Symmetry YAML: axis, vertex_pairs, excluded_vertices, joint_pairs, bone_groups."),
    click.option("--limits", type=click.Path(dir_okay=False), default=None,
                 help="Joint limits YAML (joint: [[lo x,y,z],[hi x,y,z]] radians)."),
    click.option("--exclude-offsets", type=Regex(), default=None, help="Regex of joints whose vertices get no offset (e.g. hand)."),
    click.option("--masks", "masks_dir", type=click.Path(), default=None,
                 help="Masks replacing the views': DIR/<camera>/ images (name order), DIR/<camera>.npy "
                      "(F,H,W), or one .npz with an (F,H,W) array per camera."),
    click.option("--silhouettes/--no-silhouettes", default=True, show_default=True, help="Use masks when present."),
    click.option("--gate", type=click.FloatRange(min=0), default=2.0, show_default=True,
                 help="Silhouettes count once keypoints fit within this many crop px."),
    click.option("--silhouette-weight", type=click.FloatRange(min=0), default=50.0, show_default=True,
                 help="Weight of the silhouette term."),
    click.option("--temporal-weight", type=click.FloatRange(min=0), default=1.0, show_default=True,
                 help="Weight of the temporal term."),
    click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=0.03, show_default=True, help="Adam step."),
    click.option("--temporal-order", type=click.IntRange(1, 2), default=2, show_default=True,
                 help="Temporal term on angular velocity (1, BigMaQ) or acceleration (2)."),
    click.option("--outlier-px", type=click.FloatRange(min=0), default=10.0, show_default=True,
                 help="Robust 2D residuals: detections farther than this (image px) from their robustly "
                      "triangulated point are dropped (0 = keep all)."),
]
FIT_ADVANCED = ("symmetry", "limits", "exclude_offsets", "gate", "silhouette_weight", "temporal_weight", "lr",
                "temporal_order", "outlier_px")


SIGMA_DEFAULT = "mesh-auto"   # FitConfig's blur fields as they stand (sigma_options: no change), RESULTS section 16
SIGMA_MODES = ("auto", SIGMA_DEFAULT, "mesh-anneal")


class SigmaSpec(AutoFloat):
    """``--sigma``: FLOAT (every silhouette stage), auto | mesh-auto | mesh-anneal (calibrated on the
    data), or the blur a calibrated run resolved to, as its avatar stores it: BONES,MESH (the mesh
    stage at MESH) or BONES..MESH (the mesh stage annealed from BONES to MESH)."""

    name = "float|auto|mesh-auto|mesh-anneal|bones,mesh|bones..mesh"

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            text = value.strip().lower()
            if text in SIGMA_MODES:
                return text
            for sep in ("..", ","):
                if sep in text:
                    parts = text.split(sep)
                    if len(parts) != 2:
                        self.fail(f"{value!r}: expected BONES{sep}MESH", param, ctx)
                    bones, mesh = (super(SigmaSpec, self).convert(x, param, ctx) for x in parts)
                    return f"{bones!r}{sep}{mesh!r}"
        return super().convert(value, param, ctx)


def sigma_options(sigma) -> dict:
    """The FitConfig fields a ``--sigma`` value (see :class:`SigmaSpec`) changes from FitConfig's defaults,
    which are the default mode's (mesh-auto: none), so the command's default and the Python API's are one:
    auto also calibrates the bones stage's blur, mesh-anneal anneals the mesh stage's, and a fixed blur
    (FLOAT, BONES,MESH or BONES..MESH) turns the calibration off."""
    if sigma == SIGMA_DEFAULT:
        return {}
    if sigma == "auto":
        return {"sigma_bias_bones": True}
    if sigma == "mesh-anneal":
        return {"sigma_anneal": True}
    if isinstance(sigma, str):
        sep = ".." if ".." in sigma else ","
        bones, mesh = (float(x) for x in sigma.split(sep))
        return {"sigma": bones, "sigma_mesh": mesh, "sigma_anneal": sep == "..", "sigma_bias": 0.0}
    return {"sigma": sigma, "sigma_bias": 0.0}


# model.EXTREMITY_RULES / EXTREMITY_DEFAULT, repeated so --help imports no torch (a test checks they agree)
EXTREMITY_RULES = ("names", "names-distal", "limb-ends", "limb-ends+twist")
EXTREMITY_DEFAULT = "limb-ends+twist"
# fit.MASKS_IN's values the command offers (repeated so --help imports no torch; a test checks they agree)
MASKS_IN = ("bones,mesh", "mesh", "mesh-bones", "auto")
MASKS_IN_DEFAULT = "bones,mesh"   # FitConfig.masks_in as it stands (masks_in_options: no change)


def masks_in_options(masks_in: str) -> dict:
    """The FitConfig fields ``--masks-in`` changes from FitConfig's defaults (bones,mesh: none)."""
    return {} if masks_in == MASKS_IN_DEFAULT else {"masks_in": masks_in}


def _resolve_shape(ctx) -> dict[str, str]:
    """``--keypoint-offsets auto`` -> a weight from the keypoint map, before --print-config shows it. A
    glTF template's map is its --keypoints file (or its joints); an avatar's is read by the verb."""
    if ctx.params.get("keypoint_offsets") != "auto":
        return {}
    template = ctx.params.get("template")
    if template is None or not str(template).lower().endswith((".glb", ".gltf")):
        return {"keypoint-offsets": "auto: resolved from the template's keypoint map when the run reads it"}
    from cortexkit.tools.avatar.markers import auto_keypoint_offsets, vertex_set_keypoints

    from cortexkit.tools.avatar.inputs import read_mapping

    spec = read_mapping(ctx.params.get("keypoints"), "--keypoints")
    weight, why = auto_keypoint_offsets([]) if spec is None else auto_keypoint_offsets(*vertex_set_keypoints(spec))
    ctx.params["keypoint_offsets"] = weight
    return {"keypoint-offsets": why}


@verb(group, "shape", output="artifact", torch_options=True,
      advanced=FIT_ADVANCED + ("steps", "keypoint_offsets", "sigma", "masks_in", "extremities"),
      resolve=_resolve_shape)
@click.argument("template")
@click.argument("inputs", nargs=-1)
@template_units
@_with(calibration_opts)
@click.option("--n-keyframes", type=click.IntRange(min=1), default=8, show_default=True,
              help="Keyframes spread evenly over the sequence.")
@click.option("--keyframes", default=None, help="Explicit keyframe indices, comma-separated.")
@click.option("--steps", default="100,150,150,60", show_default=True, help="Adam steps: global,pose,bones,mesh.")
@click.option("--images", "images_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of colour images, DIR/<camera>/ one per frame in name order: per-vertex "
                   "colour from the visible faces of the keyframes (texture stage).")
@click.option("--keypoint-offsets", type=AutoOffFloat(min=0), default="auto", show_default=True,
              metavar="auto|WEIGHT|off",
              help="Per-keypoint offsets (markers) riding on each keypoint's bone, fitted in the bones and "
                   "mesh stages with this L2 weight (mean squared offset in body lengths, per frame); "
                   "0 or off: keypoints sit exactly on the template's joints / vertex sets; auto: the "
                   "chosen weight when the keypoint map has a vertex-set keypoint, off when all are joints.")
@click.option("--sigma", type=SigmaSpec(min=0, min_open=True), default=SIGMA_DEFAULT, show_default=True,
              metavar="FLOAT|auto|mesh-auto|mesh-anneal",
              help="Soft-rasteriser blur of the silhouettes (crop px^2). mesh-auto: the bones stage at 0.1, "
                   "the mesh stage at the largest blur <= 0.1 at which the body fitted to the keypoints "
                   "renders within 3 % of the masks' area (sharper on thin limbs); auto: that blur in the "
                   "bones stage too; mesh-anneal: the mesh stage's blur falling geometrically from 0.1 to "
                   "it; FLOAT: one blur everywhere (0.1 before 2026-12-07); BONES,MESH or BONES..MESH: "
                   "the blurs a calibrated run stored, to repeat it.")
@click.option("--extremities", type=click.Choice(EXTREMITY_RULES), default=EXTREMITY_DEFAULT, show_default=True,
              help="Joints the track's temporal term weights x100 (stored in the avatar as template.extremity and "
                   "template.extremity_twist). limb-ends+twist: each limb's last free joint, and the twist alone "
                   "(about the bone to its child, which a keypoint on that bone cannot see) of the mid-limb joints "
                   "named wrist or ankle: track 0.92 x names over 8 cases, joint angles within 1 deg (RESULTS "
                   "section 22); names: joints named hand/foot/paw/finger/toe/wrist/ankle (before 2026-12-07); "
                   "limb-ends: the last free joints alone; names-distal: names without wrist and ankle. For a glTF "
                   "template; an avatar keeps the marks it stores.")
@click.option("--masks-in", type=click.Choice(MASKS_IN), default=MASKS_IN_DEFAULT, show_default=True,
              help="Stages whose fit the silhouettes enter. bones,mesh: the bones stage too (masks move the bone "
                   "scales and the global scale); mesh: the bones stage fits the keypoints only and the silhouettes "
                   "shape the surface alone (RESULTS section 19); mesh-bones: as mesh, with the scale and bone "
                   "scales free again in the mesh stage: surface -32 to -54 % vs keypoint-only on 6 cases where "
                   "bones,mesh gets -21 to -52 %, bones 5.8 % off (bones,mesh 8.6 %), 0.4-0.6 x the CPU, but "
                   "the hexapod's 16-camera surface 1.11 x and the quadruped's 4-camera track 1.03 x bones,mesh's, "
                   "so not the default (section 24); auto: bones,mesh and mesh-bones both fitted without one "
                   "camera (the baseline check's: most confident detections), the one whose keypoints reproject "
                   "closer to that camera's detections (median px) kept as fitted, on one camera fewer; the choice "
                   "is stored in the avatar; 1.1-1.4 x bones,mesh's CPU, it chose the better surface in 4 of 6 "
                   "cases, so not the default (section 25).")
@_with(fit_opts)
def shape(run, template, inputs, template_units, calibration, units, camera_names, n_keyframes, keyframes,
          steps, images_dir, keypoint_offsets, sigma, extremities, masks_in, keypoints, symmetry, limits, exclude_offsets, masks_dir, silhouettes, gate, silhouette_weight,
          temporal_weight, lr, temporal_order, outlier_px):
    """Subject avatar over keyframes: template + views -> avatar (scale, bone scales, offsets)."""
    from cortexkit.tools.avatar import api
    from cortexkit.tools.avatar.inputs import read_template
    from cortexkit.tools.avatar.io import AVATAR

    given = click.get_current_context().get_parameter_source("extremities") is click.core.ParameterSource.COMMANDLINE
    tpl, _, _, _ = read_template(template, template_units, keypoints, limits, exclude_offsets, symmetry,
                                 run.read_artifact, extremities, run.warn, given)
    if keypoint_offsets == "auto":  # an avatar's keypoint map: known once it is read
        from cortexkit.tools.avatar.markers import auto_keypoint_offsets, template_vertex_sets

        keypoint_offsets, run.why["keypoint-offsets"] = auto_keypoint_offsets(
            template_vertex_sets(tpl), len(tpl.keypoint_names))
        run.config["keypoint-offsets"] = keypoint_offsets
    if "keypoint-offsets" in run.why:
        run.detail(f"keypoint offsets: {run.why['keypoint-offsets']}")
    views = _views(run, inputs, calibration, units, camera_names, masks_dir)
    tensors, meta = api.shape(run, tpl, views, steps=steps, keyframes=keyframes, n_keyframes=n_keyframes,
                              images_dir=images_dir, silhouettes=silhouettes, gate=gate,
                              silhouette_weight=silhouette_weight, temporal_weight=temporal_weight, lr=lr,
                              outlier_px=outlier_px, temporal_order=temporal_order,
                              keypoint_offsets=keypoint_offsets,
                              **sigma_options(sigma), **masks_in_options(masks_in))
    run.write_artifact(tensors, AVATAR, metadata={**meta, **({"cortexkit.why": run.why} if run.why else {})})


@verb(group, "track", output="artifact", torch_options=True,
      advanced=FIT_ADVANCED[3:] + ("window", "overlap", "steps", "baseline_frames"))
@click.argument("avatar")
@click.argument("inputs", nargs=-1)
@_with(calibration_opts)
@click.option("--cameras", type=click.IntRange(min=0), default=0, show_default=True,
              help="Cameras per frame, by detection count (0 = all; BigMaQ used 6).")
@click.option("--steps", type=Size(min=1, seconds=1e-4, what='Adam steps per window'), default=240, show_default=True, help="Adam steps per window.")
@click.option("--window", type=click.IntRange(min=1), default=20, show_default=True, help="Frames per window.")
@click.option("--overlap", type=click.IntRange(min=0), default=5, show_default=True, help="Frames shared by windows.")
@output_option("--plot", metavar="PNG", help="Multi-view overlay PNG of the middle frame.")
@click.option("--baseline", type=click.Choice(["triangulate", "none"]), default="triangulate", show_default=True,
              help="Floor scored beside the track on a held-out camera (the one with the most confident "
                   "detections), both fitted without it on a block of frames, with a warning when "
                   "the avatar loses; none skips it.")
@click.option("--baseline-frames", type=click.IntRange(min=1), default=20, show_default=True,
              help="Frames of the baseline check (its cost: about this many frames of tracking).")
@_with(fit_opts[4:])
def track(run, avatar, inputs, calibration, units, camera_names, cameras, steps, window, overlap, plot,
          baseline, baseline_frames, masks_dir, silhouettes, gate, silhouette_weight, temporal_weight, lr,
          temporal_order, outlier_px):
    """Per-frame pose with the avatar frozen: avatar + views -> avatar-poses."""
    from cortexkit.tools.avatar import api
    from cortexkit.tools.avatar.io import POSES, avatar_from_artifact

    if plot:
        require_matplotlib()
    if overlap >= window:
        raise CortexError(f"--overlap {overlap} must be smaller than --window {window}")
    tpl, shp, _ = avatar_from_artifact(run.read_artifact(avatar, "avatar"))
    views = _views(run, inputs, calibration, units, camera_names, masks_dir)
    config = api.fit_config(silhouettes=silhouettes, gate=gate, silhouette_weight=silhouette_weight,
                            temporal_weight=temporal_weight, lr=lr, track_steps=steps, window=window,
                            overlap=overlap, cameras=cameras, outlier_px=outlier_px,
                            temporal_order=temporal_order)
    tensors, meta = api.track(run, tpl, shp, views, config, plot=plot,
                              baseline_frames=None if baseline == "none" else baseline_frames)
    run.write_artifact(tensors, POSES, metadata=meta)


@verb(group, "export", output=None)
@click.argument("avatar")
@click.argument("poses")
@click.option("-o", "--output", required=True, type=OutputPath(), metavar="FILE.glb",
              help="The .glb or .gltf to write.")
@click.option("--obj-dir", type=click.Path(file_okay=False), default=None, help="Also write one OBJ per frame here.")
def export(run, avatar, poses, obj_dir):
    """Fitted avatar + poses -> glTF 2.0 skin with the fitted rest shape and an animation clip."""
    from cortexkit.formats.gltf import write_gltf, write_obj
    from cortexkit.formats.stdio import make_folder, write_bytes
    from cortexkit.tools.avatar.export import gltf_arrays, posed_meshes
    from cortexkit.tools.avatar.io import POSES, avatar_from_artifact, poses_from_artifact

    output = run.output
    if not output.lower().endswith((".glb", ".gltf")):
        raise CortexError(f"-o {output}: the export is glTF; name it .glb or .gltf")
    tpl, shp, colors = avatar_from_artifact(run.read_artifact(avatar, "avatar"))
    colors = None if colors is None else tpl.to_source(colors.double()).numpy()   # the input's order
    art = run.read_artifact(poses, POSES)
    pose = poses_from_artifact(art)
    if pose.rotations.shape[1] != tpl.n_joints:
        raise CortexError(f"{poses}: poses of {pose.rotations.shape[1]} joints, the avatar has {tpl.n_joints}")
    data = write_gltf(output, **gltf_arrays(tpl, shp, pose, float(art.meta_json("cortexkit.fps", 30.0))),
                      colors=colors)
    if obj_dir:
        make_folder(obj_dir)  # removed again if a write fails (a full disk)
        for f, verts in enumerate(posed_meshes(tpl, shp, pose)):
            write_bytes(os.path.join(obj_dir, f"frame{f:05d}.obj"),
                        write_obj(verts * 1e-3, tpl.output_faces.numpy(), colors))
    write_bytes(output, data)


@verb(group, "evaluate", output="report")
@click.argument("views")
@click.option("--points", default=None, help="A triangulate table to score.")
@click.option("--avatar", default=None, help="A fitted avatar (with --poses).")
@click.option("--poses", default=None, help="Tracked poses (with --avatar).")
@click.option("--reference", default=None,
              help="3D points to score against instead of synthetic truth: a triangulate table or a "
                   "CSV/NPZ table of NAME_x NAME_y NAME_z columns (mm), e.g. motion capture.")
def evaluate(run, views, points, avatar, poses, reference):
    """Metrics against a synth views artifact's truth, or against 3D points you have (--reference)."""
    from cortexkit.tools.avatar.io import POSES, VIEWS, avatar_from_artifact, poses_from_artifact, views_from_artifact
    from cortexkit.tools.avatar.metrics import evaluate_all

    v = views_from_artifact(run.read_artifact(views, VIEWS))
    if not v["truth"] and reference is None:
        raise CortexError(f"{views}: no truth.* tensors (not a 'fit-avatar synth' artifact): give --reference "
                          "POINTS (a triangulation or motion-capture table) to score against")
    if points is None and (avatar is None or poses is None):
        raise CortexError("give --points TABLE, or --avatar and --poses")
    from cortexkit.formats.table import read_table

    table = None if points is None else read_table(points)
    ref = None if reference is None else read_table(reference)
    fitted = None
    if avatar is not None and poses is not None:
        tpl, shp, colors = avatar_from_artifact(run.read_artifact(avatar, "avatar"))
        art = run.read_artifact(poses, POSES)
        fitted = (tpl, shp, poses_from_artifact(art), float(art.meta_json("cortexkit.seconds_per_frame", 0.0)),
                  colors)
        unknown = [n for n in v["keypoint_names"] if n not in tpl.keypoint_names]
        if unknown:
            raise CortexError(f"{views}: keypoint(s) {', '.join(unknown[:5])} are not in the avatar's keypoint map")
    run.write_report(evaluate_all(v, table, fitted, ref))


@verb(group, "render", output="report")
@click.argument("avatar")
@click.argument("poses")
@click.argument("inputs", nargs=-1)
@_with(calibration_opts)
@click.option("--mask-dir", type=click.Path(file_okay=False), required=True,
              help="Write the fitted silhouettes here, DIR/<camera>/NNNNN.png (full frame, 255 inside).")
@click.option("--masks", "masks_dir", type=click.Path(), default=None,
              help="Masks to compare with (as for track): adds per-camera IoU to the report.")
def render(run, avatar, poses, inputs, calibration, units, camera_names, mask_dir, masks_dir):
    """Fitted silhouettes per camera as mask images (full frame), with IoU against masks you have."""
    from cortexkit.tools.avatar import api
    from cortexkit.tools.avatar.io import POSES, avatar_from_artifact, poses_from_artifact

    tpl, shp, _ = avatar_from_artifact(run.read_artifact(avatar, "avatar"))
    pose = poses_from_artifact(run.read_artifact(poses, POSES))
    views = _views(run, inputs, calibration, units, camera_names, masks_dir)
    run.write_report(api.render(run, tpl, shp, pose, views, mask_dir, source=poses))
