"""2D keypoint files users have: SLEAP analysis .h5 and DeepLabCut .h5/.csv, and mask images.

Every reader returns ``(names [K], xy (F, K, 2) float with NaN where undetected, score (F, K))``
for one camera and one animal (``individual`` picks one of a multi-animal file; the first by
default).
"""

from __future__ import annotations

import io
import os

import numpy as np

from cortexkit.formats.errors import CortexError


def read_sleap(path: str | os.PathLike, track: int = 0):
    """A SLEAP analysis HDF5 (``tracks`` (n_tracks, 2, n_nodes, n_frames), ``point_scores``,
    ``node_names``), read with h5py."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            if "tracks" not in f or "node_names" not in f:
                raise CortexError(f"{path}: not a SLEAP analysis file (no 'tracks'/'node_names')")
            tracks = np.asarray(f["tracks"], float)
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in f["node_names"][:]]
            scores = np.asarray(f["point_scores"], float) if "point_scores" in f else None
    except OSError as exc:
        raise CortexError(f"{path}: cannot read HDF5 ({exc})") from None
    if tracks.ndim != 4 or tracks.shape[1] != 2 or tracks.shape[2] != len(names):
        raise CortexError(f"{path}: 'tracks' has shape {list(tracks.shape)}, expected "
                          f"(n_tracks, 2, {len(names)}, n_frames)")
    if track >= tracks.shape[0]:
        raise CortexError(f"{path}: track {track} requested, the file has {tracks.shape[0]}")
    xy = tracks[track].transpose(2, 1, 0)            # (F, K, 2)
    score = np.ones(xy.shape[:2]) if scores is None else scores[track].T
    score = np.where(np.isfinite(xy).all(-1), np.nan_to_num(score, nan=1.0), 0.0)
    return names, xy, score


def _dlc_frame(df, path, individual):
    cols = df.columns
    levels = list(cols.names)
    if "bodyparts" not in levels or "coords" not in levels:
        raise CortexError(f"{path}: not a DeepLabCut table (column levels {levels})")
    if "individuals" in levels:
        inds = list(dict.fromkeys(cols.get_level_values("individuals")))
        who = inds[0] if individual is None else individual
        if who not in inds:
            raise CortexError(f"{path}: no individual '{who}' (has {', '.join(inds)})")
        df = df.xs(who, axis=1, level="individuals")
    names = list(dict.fromkeys(df.columns.get_level_values("bodyparts")))
    xy = np.stack([np.stack([df.xs((n, c), axis=1, level=("bodyparts", "coords")).iloc[:, 0].to_numpy(float)
                             for c in ("x", "y")], -1) for n in names], 1)
    score = np.stack([df.xs((n, "likelihood"), axis=1, level=("bodyparts", "coords")).iloc[:, 0].to_numpy(float)
                      for n in names], 1)
    score = np.where(np.isfinite(xy).all(-1), np.nan_to_num(score), 0.0)
    return names, xy, score


def read_dlc(path: str | os.PathLike, individual: str | None = None):
    """A DeepLabCut table: .h5 (pandas key ``df_with_missing``; needs PyTables) or .csv (3 or 4
    header rows scorer / [individuals] / bodyparts / coords)."""
    import pandas as pd

    text = str(path)
    try:
        if text.endswith((".h5", ".hdf5")):
            try:
                df = pd.read_hdf(text)
            except ImportError:
                raise CortexError(f"{path}: reading DeepLabCut .h5 needs PyTables: pip install tables "
                                  "(or export the CSV from DeepLabCut)") from None
        else:
            with open(text, "rb") as handle:
                raw = handle.read()
            lines = raw.decode("utf-8", "replace").splitlines()
            n_header = 4 if len(lines) > 1 and lines[1].split(",")[0].strip() == "individuals" else 3
            df = pd.read_csv(io.BytesIO(raw), header=list(range(n_header)), index_col=0)
    except FileNotFoundError:
        raise CortexError(f"{path}: no such file") from None
    except (ValueError, KeyError, pd.errors.ParserError) as exc:
        raise CortexError(f"{path}: not a DeepLabCut table ({exc})") from None
    return _dlc_frame(df, path, individual)


def read_keypoints(path: str | os.PathLike, individual: str | None = None):
    """Dispatch on the file: SLEAP analysis .h5, DeepLabCut .h5 or .csv."""
    text = str(path)
    if not os.path.exists(text):
        raise CortexError(f"{path}: no such file")
    if text.endswith((".h5", ".hdf5", ".slp.h5")):
        import h5py

        try:
            with h5py.File(text, "r") as f:
                sleap = "tracks" in f and "node_names" in f
        except OSError as exc:
            raise CortexError(f"{path}: cannot read HDF5 ({exc})") from None
        if sleap:
            return read_sleap(text, int(individual or 0))
    return read_dlc(text, individual)


def read_mask(path: str | os.PathLike) -> np.ndarray:
    """A mask image (PNG/TIFF/...) or .npy -> (H, W) float coverage in [0, 1]."""
    text = str(path)
    if text.endswith(".npy"):
        arr = np.load(text)
    else:
        import cv2

        arr = cv2.imread(text, cv2.IMREAD_UNCHANGED)
        if arr is None:
            raise CortexError(f"{path}: cannot read the mask image")
    arr = np.asarray(arr, float)
    if arr.ndim == 3:
        arr = arr.max(-1)
    top = arr.max() if arr.size else 0.0
    return arr / top if top > 1 else arr


IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".npy")


def image_folders(folder: str | os.PathLike, camera_names: list[str], frames: int,
                  what: str = "images") -> list[list[str]]:
    """``folder``/<camera>/ holds one image per frame, in file-name order: -> per camera the list
    of the first ``frames`` paths. A missing camera folder or too few images is an error."""
    root = str(folder)
    if not os.path.isdir(root):
        raise CortexError(f"{root}: no such folder of {what}")
    out = []
    for name in camera_names:
        sub = os.path.join(root, name)
        if not os.path.isdir(sub):
            raise CortexError(f"{root}: no folder '{name}' of {what} for camera {name} "
                              f"(expected {root}/<camera>/ per camera)")
        files = sorted(f for f in os.listdir(sub) if f.lower().endswith(IMAGE_EXTENSIONS))
        if len(files) < frames:
            raise CortexError(f"{sub}: {len(files)} {what} for {frames} frames")
        out.append([os.path.join(sub, f) for f in files[:frames]])
    return out


def read_image(path: str | os.PathLike) -> np.ndarray:
    """A colour image -> (H, W, 3) uint8 BGR (OpenCV's order)."""
    import cv2

    arr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if arr is None:
        raise CortexError(f"{path}: cannot read the image")
    return arr


KEYPOINT_EXTENSIONS = (".h5", ".hdf5", ".csv")


def keypoint_files(inputs: list[str]) -> tuple[list[str], set[str]]:
    """Inputs as given (files, or folders of per-camera 2D files) -> (files, those that came from
    a folder). A folder contributes its .h5/.hdf5/.csv files in name order."""
    files, from_folder = [], set()
    for path in inputs:
        if os.path.isdir(path):
            found = sorted(os.path.join(path, f) for f in os.listdir(path)
                           if f.lower().endswith(KEYPOINT_EXTENSIONS) and not f.startswith("."))
            if not found:
                raise CortexError(f"{path}: a folder without 2D keypoint files (.h5, .hdf5, .csv)")
            files += found
            from_folder.update(found)
        else:
            files.append(path)
    return files, from_folder


class MaskSource:
    """Masks as users have them, read one (frame, camera) at a time: ``read(f, c)`` -> (H, W)
    coverage in [0, 1].

    - a folder of image folders ``DIR/<camera>/`` (one image or .npy per frame, name order);
    - a folder of per-camera arrays ``DIR/<camera>.npy`` or ``DIR/<camera>.npz`` (one array
      (F, H, W), or in an .npz one array per frame in key order);
    - one ``.npz`` with an array (F, H, W) per camera, keyed by camera name."""

    def __init__(self, path: str | os.PathLike, camera_names: list[str], frames: int):
        root = str(path)
        self.kind, self.names, self.frames = None, list(camera_names), frames
        if os.path.isfile(root):
            if not root.lower().endswith(".npz"):
                raise CortexError(f"{root}: masks are a folder (DIR/<camera>/ images or DIR/<camera>.npy) "
                                  "or one .npz of arrays per camera")
            arrays = self._npz(root)
            missing = [n for n in camera_names if n not in arrays]
            if missing:
                raise CortexError(f"{root}: no mask array for camera(s) {', '.join(missing)} (the .npz has "
                                  f"{', '.join(sorted(arrays)) or 'none'}; one array (F, H, W) per camera name)")
            self.kind, self.arrays = "arrays", [self._stack(arrays[n], f"{root}[{n}]") for n in camera_names]
            return
        if not os.path.isdir(root):
            raise CortexError(f"{root}: no such folder or .npz of masks")
        per_camera = [next((os.path.join(root, n + ext) for ext in (".npy", ".npz")
                            if os.path.isfile(os.path.join(root, n + ext))), None) for n in camera_names]
        if all(p is not None for p in per_camera):
            self.kind, self.arrays = "arrays", []
            for p in per_camera:
                if p.endswith(".npy"):
                    arr = self._npy(p)
                else:
                    arrs = self._npz(p)
                    arr = arrs[next(iter(arrs))] if len(arrs) == 1 else np.stack([arrs[k] for k in sorted(arrs)])
                self.arrays.append(self._stack(arr, p))
            return
        self.kind, self.files = "images", image_folders(root, camera_names, frames, "masks")

    @staticmethod
    def _npy(path):
        try:
            return np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise CortexError(f"{path}: not a .npy array ({exc})") from None

    @staticmethod
    def _npz(path):
        try:
            with np.load(path) as data:
                return {k: data[k] for k in data.files}
        except (OSError, ValueError) as exc:
            raise CortexError(f"{path}: not a .npz of arrays ({exc})") from None

    def _stack(self, arr, where):
        if arr.ndim != 3:
            raise CortexError(f"{where}: masks must be (frames, height, width), got shape {list(arr.shape)}")
        if arr.shape[0] < self.frames:
            raise CortexError(f"{where}: {arr.shape[0]} masks for {self.frames} frames")
        return arr

    def where(self, f: int, c: int) -> str:
        return self.files[c][f] if self.kind == "images" else f"masks of camera {self.names[c]}, frame {f}"

    def read(self, f: int, c: int) -> np.ndarray:
        if self.kind == "images":
            return read_mask(self.files[c][f])
        arr = np.asarray(self.arrays[c][f], float)
        top = arr.max() if arr.size else 0.0
        return arr / top if top > 1 else arr
