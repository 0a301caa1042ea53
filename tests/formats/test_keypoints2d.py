"""2D keypoint readers: DeepLabCut .csv/.h5 (single and multi-animal) and SLEAP analysis .h5,
written here in each tool's own layout and read back to the arrays they were made from."""

import numpy as np
import pytest

from cortexkit.formats.errors import CortexError
from cortexkit.formats.keypoints2d import read_keypoints

pd = pytest.importorskip("pandas")

NAMES = ["nose", "ear_l", "tail"]


def _arrays(frames=5, seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 640, (frames, len(NAMES), 2))
    lik = rng.uniform(0.1, 1.0, (frames, len(NAMES)))
    xy[2, 1] = np.nan                       # a missed detection: DLC writes NaN
    return xy, lik


def _dlc_frame(xy, lik, individuals=None):
    inds = individuals or [None]
    cols, data = [], []
    for a, ind in enumerate(inds):
        for k, name in enumerate(NAMES):
            for c, values in (("x", xy[a][:, k, 0]), ("y", xy[a][:, k, 1]), ("likelihood", lik[a][:, k])):
                cols.append(("DLC_resnet50", *([ind] if individuals else []), name, c))
                data.append(values)
    levels = ["scorer", *(["individuals"] if individuals else []), "bodyparts", "coords"]
    return pd.DataFrame(np.array(data).T, columns=pd.MultiIndex.from_tuples(cols, names=levels))


def _check(names, xy_read, score, xy, lik):
    assert names == NAMES
    finite = np.isfinite(xy).all(-1)
    np.testing.assert_allclose(xy_read[finite], xy[finite])
    np.testing.assert_allclose(score[finite], lik[finite])
    assert score[2, 1] == 0.0               # NaN detection -> zero confidence, not NaN


def test_deeplabcut_csv_and_h5_read_back(tmp_path):
    xy, lik = _arrays()
    df = _dlc_frame([xy], [lik])
    df.to_csv(tmp_path / "cam1DLC.csv")
    _check(*read_keypoints(tmp_path / "cam1DLC.csv"), xy, lik)
    pytest.importorskip("tables")
    df.to_hdf(tmp_path / "cam1DLC.h5", key="df_with_missing", mode="w")
    _check(*read_keypoints(tmp_path / "cam1DLC.h5"), xy, lik)


def test_multi_animal_csv_selects_the_individual(tmp_path):
    (xy1, lik1), (xy2, lik2) = _arrays(seed=1), _arrays(seed=2)
    _dlc_frame([xy1, xy2], [lik1, lik2], ["mouse1", "mouse2"]).to_csv(tmp_path / "ma.csv")
    _check(*read_keypoints(tmp_path / "ma.csv"), xy1, lik1)
    _check(*read_keypoints(tmp_path / "ma.csv", "mouse2"), xy2, lik2)
    with pytest.raises(CortexError, match="no individual 'rat'"):
        read_keypoints(tmp_path / "ma.csv", "rat")


def test_sleap_analysis_h5_read_back(tmp_path):
    h5py = pytest.importorskip("h5py")
    xy, lik = _arrays()
    with h5py.File(tmp_path / "s.analysis.h5", "w") as f:
        f["tracks"] = xy.transpose(2, 1, 0)[None]          # (tracks, 2, nodes, frames)
        f["point_scores"] = lik.T[None]
        f["node_names"] = [n.encode() for n in NAMES]
    _check(*read_keypoints(tmp_path / "s.analysis.h5"), xy, lik)


def test_not_a_keypoint_table_is_named(tmp_path):
    (tmp_path / "plain.csv").write_text("a,b\n1,2\n")
    with pytest.raises(CortexError, match="plain.csv: not a DeepLabCut table"):
        read_keypoints(tmp_path / "plain.csv")
    with pytest.raises(CortexError, match="no such file"):
        read_keypoints(tmp_path / "absent.csv")


def test_masks_as_image_files_or_arrays_read_to_coverage(tmp_path):
    """The issue's 'masks as image files or arrays': an 8-bit PNG (0/255), an RGB PNG and a .npy
    of 0/1 all read back as the same (H, W) coverage in [0, 1]; an unreadable image is named."""
    cv2 = pytest.importorskip("cv2")
    from cortexkit.formats.keypoints2d import read_mask

    mask = np.zeros((6, 9))
    mask[1:4, 2:7] = 1.0
    cv2.imwrite(str(tmp_path / "m.png"), (mask * 255).astype(np.uint8))
    cv2.imwrite(str(tmp_path / "rgb.png"), np.repeat((mask * 255).astype(np.uint8)[..., None], 3, -1))
    np.save(tmp_path / "m.npy", mask.astype(bool))
    for name in ("m.png", "rgb.png", "m.npy"):
        np.testing.assert_array_equal(read_mask(tmp_path / name), mask)
    (tmp_path / "bad.png").write_bytes(b"not a png")
    with pytest.raises(CortexError, match="bad.png: cannot read the mask image"):
        read_mask(tmp_path / "bad.png")
