"""Camera calibrations: Anipose / aniposelib ``calibration.toml`` in and out.

Each ``[cam_N]`` table holds ``name``, ``size`` [w, h], ``matrix`` (3x3), ``distortions``
(OpenCV order k1 k2 p1 p2 k3 [k4 k5 k6]), ``rotation`` (Rodrigues, world -> camera) and
``translation``. Anipose files do not say their length unit: the caller states it (``units``) and
the translations come back in millimetres; a ``[metadata] units`` key (written by
:func:`write_calibration`) that disagrees with the stated unit is an error. Other tables are ignored.
"""

from __future__ import annotations

import os
import tomllib

import numpy as np

from cortexkit.formats.errors import CortexError

UNIT_MM = {"mm": 1.0, "cm": 10.0, "m": 1000.0}


def unit_factor(units: str, what: str = "--units") -> float:
    if units not in UNIT_MM:
        raise CortexError(f"{what} {units}: expected one of {', '.join(UNIT_MM)}")
    return UNIT_MM[units]


def read_calibration(path: str | os.PathLike, units: str) -> dict:
    """-> dict(names [C], K (C, 3, 3), dist (C, 8), rvec (C, 3), tvec (C, 3) mm, size (C, 2))."""
    factor = unit_factor(units)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise CortexError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CortexError(f"{path}: not a TOML calibration ({exc})") from None
    meta = data.get("metadata")
    stated = meta.get("units") if isinstance(meta, dict) else None
    if isinstance(stated, str) and stated in UNIT_MM and stated != units:
        raise CortexError(f"{path}: the calibration says units = \"{stated}\", --units says {units}: "
                          f"give --units {stated}")
    cams = [v for k, v in data.items() if isinstance(v, dict) and k != "metadata"]
    if not cams:
        raise CortexError(f"{path}: no [cam_N] tables (expected an Anipose calibration.toml)")
    out = {"names": [], "K": [], "dist": [], "rvec": [], "tvec": [], "size": []}
    for i, cam in enumerate(cams):
        try:
            K = np.asarray(cam["matrix"], float).reshape(3, 3)
            dist = np.asarray(cam.get("distortions", [0] * 5), float).reshape(-1)
            rvec = np.asarray(cam["rotation"], float).reshape(3)
            tvec = np.asarray(cam["translation"], float).reshape(3)
            size = np.asarray(cam.get("size", [2 * K[0, 2] + 1, 2 * K[1, 2] + 1]), float).reshape(2)
        except (KeyError, ValueError) as exc:
            raise CortexError(f"{path}: camera {i} is missing or has a malformed field ({exc})") from None
        if dist.size > 8:
            raise CortexError(f"{path}: camera {i} has {dist.size} distortion coefficients (at most 8)")
        values = np.concatenate([K.ravel(), dist, rvec, tvec])
        if not np.isfinite(values).all():
            raise CortexError(f"{path}: camera {i} has a NaN or infinite value")
        out["names"].append(str(cam.get("name", f"cam_{i}")))
        out["K"].append(K)
        out["dist"].append(np.pad(dist, (0, 8 - dist.size)))
        out["rvec"].append(rvec)
        out["tvec"].append(tvec * factor)
        out["size"].append(size)
    if len(set(out["names"])) != len(out["names"]):
        raise CortexError(f"{path}: camera names repeat ({', '.join(out['names'])})")
    return {k: (v if k == "names" else np.stack(v)) for k, v in out.items()}


def write_calibration(cams: dict, units: str = "mm") -> bytes:
    """TOML bytes of cameras in the dict layout of :func:`read_calibration` (tvec in mm)."""
    factor = unit_factor(units)
    lines = []
    fmt = lambda a: "[ " + ", ".join(repr(float(x)) for x in np.ravel(a)) + ",]"  # noqa: E731
    for i, name in enumerate(cams["names"]):
        K = cams["K"][i]
        lines += [f"[cam_{i}]", f'name = "{name}"', f"size = {fmt(cams['size'][i])}",
                  "matrix = [ " + ", ".join(fmt(r) for r in K) + ",]",
                  f"distortions = {fmt(cams['dist'][i][:5])}", f"rotation = {fmt(cams['rvec'][i])}",
                  f"translation = {fmt(np.asarray(cams['tvec'][i]) / factor)}", ""]
    lines += ["[metadata]", f'units = "{units}"', ""]
    return "\n".join(lines).encode()
