"""Two held-out image sets built from data scikit-learn ships (no download), in the formats a user
brings: never looked at while choosing train-pcn's defaults (MNIST and the CIFAR-10 subset chose
them), used only to check them.

    python benchmarks/train_pcn/heldout.py DIR

- DIR/digits-idx/: scikit-learn's 1,797 handwritten digits (8x8, 0-16, UCI optdigits), scaled to
  0-255 and enlarged x4 (nearest) to 32x32 so every VGG fits, as MNIST-style IDX files
  (train-/t10k-images-idx3-ubyte and -labels-idx1-ubyte); a stratified split (seed 0): 1,297 train,
  500 test.
- DIR/patches/: an image folder (train|test/CLASS/NNNN.png) of 32x32 RGB patches cut from
  scikit-learn's two sample photographs (china.jpg, flower.jpg); 8 classes = photograph x
  quadrant; train patches come from the upper 70 % of each quadrant, test patches from below it
  (no pixel shared), 300 train and 100 test per class (seed 0): 2,400 / 800.

A third set, built at stop 40 after patches had been looked at (``heldout.py DIR --skimage``,
needs ``pip install scikit-image``; only images the package bundles, nothing downloaded):

- DIR/skpatches/: an image folder of 32x32 RGB patches from eight photographs scikit-image ships
  (astronaut, coffee, chelsea, rocket, hubble_deep_field, immunohistochemistry, retina, the left
  view of stereo_motorcycle), each resized so its shorter side is 192 pixels; 8 classes = the
  photograph; train patches from the upper 70 % of each photograph, test patches from below it
  (no pixel shared), 300 train and 100 test per class (seed 0): 2,400 / 800.

A fourth set, built at pcn17 before its deciding runs and looked at only after its verdict
(``heldout.py DIR --textures``, scikit-image's bundled files again, nothing downloaded):

- DIR/sktextures/: an image folder of 32x32 grayscale (one channel) patches from the eight
  grayscale images scikit-image ships that no earlier set used (brick, grass, gravel, camera, moon,
  coins, page, text: three textures, two photographs, a micrograph-like coin tray, two scanned
  texts), each resized so its shorter side is 192 pixels; 8 classes = the image; train patches
  from the upper 70 %, test patches from below it (no pixel shared), 300 train and 100 test per
  class (seed 0): 2,400 / 800.

A fifth set, built at pcn18 before its deciding runs and looked at only after its verdict
(``heldout.py DIR --samples``; bundled files only, nothing downloaded; needs scikit-image and
matplotlib):

- DIR/samplegray/: an image folder of 32x32 grayscale (one channel) patches from eight images no
  earlier set used: five of matplotlib's bundled sample files (the grace_hopper.jpg and
  Minduka_Present_Blue_Pack.png photographs as grayscale; the s1045 MRI slice, the
  jacksboro_fault_dem elevation map and the topobathy map min-max scaled to 0-255) and three
  scikit-image images (cell, microaneurysms, clock); each resized so its shorter side is 192
  pixels; 8 classes = the image; train patches from the upper 70 %, test patches from below it
  (no pixel shared), 300 train and 100 test per class (seed 0): 2,400 / 800.

A sixth set, built at pcn19 before its deciding runs and looked at only after its verdict
(``heldout.py DIR --rest``; bundled files only, nothing downloaded; needs scikit-image and
matplotlib). The photographs scikit-image bundles (astronaut, chelsea, coffee, rocket,
hubble_deep_field, immunohistochemistry, retina, motorcycle) are skpatches' classes already, so
this set takes the bundled images no earlier set used:

- DIR/skrest/: an image folder of 32x32 grayscale (one channel) patches from eight images:
  scikit-image's horse silhouette, Shepp-Logan phantom, logo, colour wheel (``color.png``) and
  grey chessboard, its Labeled-Faces-in-the-Wild subset as two mosaics (the 100 faces and the 100
  non-face crops, each 10x10 tiles of 25x25 = 250x250), and matplotlib's ``logo2.png``; all as
  grayscale; each resized so its shorter side is 192 pixels; 8 classes = the image; train patches
  from the upper 70 %, test patches from below it (no pixel shared), 300 train and 100 test per
  class (seed 0): 2,400 / 800.

A seventh set, built at pcn20 before its deciding runs and looked at only after its verdict
(``heldout.py DIR --glyphs``; nothing downloaded, only Pillow and the TrueType fonts matplotlib
ships). scikit-image's and matplotlib's bundled images are used up by the sets above, so this one
takes another kind of package data: letters.

- DIR/glyphs/: an image folder of 32x32 grayscale (one channel) images of eight lowercase letters
  (a, b, d, e, g, k, r, s; class = the letter), each drawn at a random size (16-26 px), position
  (within +-4 px of the centre), rotation (+-15 degrees) and ink / paper grey levels, with
  Gaussian pixel noise (sd 8); train images use the 12 DejaVu faces (Sans, Sans Mono, Serif, each
  regular / bold / oblique or italic / bold oblique or italic), test images the 9 faces of two
  other families (STIX General regular / bold / italic / bold italic; Computer Modern cmr10, cmb10,
  cmti10, cmss10, cmtt10): no typeface shared between train and test, the shift in style that the
  upper / lower split gives the photo sets; 300 train and 100 test per class (seed 0): 2,400 / 800.

An eighth set, built at pcn22 before its deciding runs and looked at only after its verdict
(``heldout.py DIR --numerals``; the glyphs builder with other characters and another seed):

- DIR/numerals/: as glyphs, but the eight classes are the digits 2-9 (0 and 1 left out: o / l
  look-alikes in some faces) and the random stream is seeded 1; same train / test typefaces
  (DejaVu vs STIX General and Computer Modern), 2,400 / 800.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np


def write_idx(path: Path, array: np.ndarray) -> None:
    """An IDX file of unsigned bytes (magic 0x08, one 4-byte size per dimension)."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + b"".join(
        struct.pack(">I", d) for d in array.shape)
    path.write_bytes(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def digits(out: Path) -> None:
    from sklearn.datasets import load_digits

    data = load_digits()
    images = np.round(data.images * 255 / 16).astype(np.uint8)
    images = images.repeat(4, axis=1).repeat(4, axis=2)          # (1797, 32, 32)
    labels = data.target.astype(np.uint8)
    rng = np.random.default_rng(0)
    test = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:50] for c in range(10)])
    train = np.setdiff1d(np.arange(len(labels)), test)
    out.mkdir(parents=True, exist_ok=True)
    for prefix, index in (("train", train), ("t10k", np.sort(test))):
        write_idx(out / f"{prefix}-images-idx3-ubyte", images[index])
        write_idx(out / f"{prefix}-labels-idx1-ubyte", labels[index])


def patches(out: Path, size: int = 32, stride: int = 6, per_class=(300, 100)) -> None:
    from PIL import Image
    from sklearn.datasets import load_sample_images

    photos = load_sample_images()
    rng = np.random.default_rng(0)
    for photo, name in zip(photos.images, ("china", "flower")):
        h, w = photo.shape[0] // 2, photo.shape[1] // 2
        for q in range(4):
            quadrant = photo[(q // 2) * h:(q // 2 + 1) * h, (q % 2) * w:(q % 2 + 1) * w]
            cut = int(0.7 * h)
            xs = range(0, w - size + 1, stride)
            sets = {"train": [(y, x) for y in range(0, cut - size + 1, stride) for x in xs],
                    "test": [(y, x) for y in range(cut, h - size + 1, stride) for x in xs]}
            for (split, spots), count in zip(sets.items(), per_class):
                folder = out / split / f"{name}-q{q}"
                folder.mkdir(parents=True, exist_ok=True)
                for i in rng.permutation(len(spots))[:count]:
                    y, x = spots[i]
                    Image.fromarray(quadrant[y:y + size, x:x + size]).save(folder / f"{i:04d}.png")


SKIMAGE_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field",
                  "immunohistochemistry", "retina", "stereo_motorcycle")


SKIMAGE_GRAY = ("brick", "grass", "gravel", "camera", "moon", "coins", "page", "text")


SAMPLE_GRAY = ("grace_hopper", "s1045", "jacksboro_fault_dem", "topobathy", "minduka_present",
               "cell", "microaneurysms", "clock")


REST_GRAY = ("horse", "phantom", "logo", "colorwheel", "chessboard", "lfw_faces", "lfw_nonfaces",
             "mpl_logo2")


def rest_image(name: str) -> np.ndarray:
    """pcn19's fresh set: one bundled image no earlier set used, as uint8 grayscale."""
    from pathlib import Path as _P

    from PIL import Image

    import skimage.data
    here = _P(skimage.data.__file__).parent
    if name in ("lfw_faces", "lfw_nonfaces"):     # 200 x 25 x 25: 100 faces, then 100 non-faces
        tiles = np.load(here / "lfw_subset.npy")
        tiles = tiles[:100] if name == "lfw_faces" else tiles[100:200]
        mosaic = tiles.reshape(10, 10, 25, 25).transpose(0, 2, 1, 3).reshape(250, 250)
        return _to_byte(mosaic)
    if name == "mpl_logo2":
        import matplotlib
        file = _P(matplotlib.get_data_path()) / "sample_data" / "logo2.png"
    else:
        file = here / {"horse": "horse.png", "phantom": "phantom.png", "logo": "logo.png",
                       "colorwheel": "color.png", "chessboard": "chessboard_GRAY.png"}[name]
    return np.asarray(Image.open(file).convert("L"))


def _to_byte(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return np.round(255 * (a - a.min()) / (a.max() - a.min())).astype(np.uint8)


def sample_image(name: str) -> np.ndarray:
    """pcn18's fresh set: one bundled image (matplotlib sample data or scikit-image) as uint8
    grayscale."""
    from PIL import Image

    if name in ("cell", "microaneurysms", "clock"):
        import skimage.data
        return np.asarray(getattr(skimage.data, name)())
    import matplotlib.cbook as cbook
    if name == "s1045":                   # 256x256 16-bit MRI slice
        with cbook.get_sample_data("s1045.ima.gz") as f:
            return _to_byte(np.frombuffer(f.read(), np.uint16).reshape(256, 256))
    if name == "jacksboro_fault_dem":
        return _to_byte(cbook.get_sample_data("jacksboro_fault_dem.npz")["elevation"])
    if name == "topobathy":
        return _to_byte(cbook.get_sample_data("topobathy.npz")["topo"])
    file = {"grace_hopper": "grace_hopper.jpg",
            "minduka_present": "Minduka_Present_Blue_Pack.png"}[name]
    return np.asarray(Image.open(cbook.get_sample_data(file, asfileobj=False)).convert("L"))


def sk_patches(out: Path, size: int = 32, stride: int = 4, short: int = 192,
               per_class=(300, 100), names=SKIMAGE_PHOTOS, load=None) -> None:
    import skimage.data
    from PIL import Image

    rng = np.random.default_rng(0)
    for name in names:
        photo = load(name) if load else getattr(skimage.data, name)()
        if isinstance(photo, tuple):          # stereo_motorcycle: (left, right, disparity)
            photo = photo[0]
        photo = np.asarray(photo)
        image = Image.fromarray((photo[..., :3] if photo.ndim == 3 else photo).astype(np.uint8))
        scale = short / min(image.size)
        image = image.resize((round(image.size[0] * scale), round(image.size[1] * scale)),
                             Image.BICUBIC)
        pixels = np.asarray(image)
        h, w = pixels.shape[:2]
        cut = int(0.7 * h)
        xs = range(0, w - size + 1, stride)
        sets = {"train": [(y, x) for y in range(0, cut - size + 1, stride) for x in xs],
                "test": [(y, x) for y in range(cut, h - size + 1, stride) for x in xs]}
        for (split, spots), count in zip(sets.items(), per_class):
            if len(spots) < count:
                raise ValueError(f"{name}: {len(spots)} {split} patches, {count} wanted")
            folder = out / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in rng.permutation(len(spots))[:count]:
                y, x = spots[i]
                Image.fromarray(pixels[y:y + size, x:x + size]).save(folder / f"{i:04d}.png")


GLYPHS = ("a", "b", "d", "e", "g", "k", "r", "s")
NUMERALS = ("2", "3", "4", "5", "6", "7", "8", "9")   # pcn22
GLYPH_FONTS = {
    "train": ("DejaVuSans", "DejaVuSans-Bold", "DejaVuSans-Oblique", "DejaVuSans-BoldOblique",
              "DejaVuSansMono", "DejaVuSansMono-Bold", "DejaVuSansMono-Oblique",
              "DejaVuSansMono-BoldOblique", "DejaVuSerif", "DejaVuSerif-Bold",
              "DejaVuSerif-Italic", "DejaVuSerif-BoldItalic"),
    "test": ("STIXGeneral", "STIXGeneralBol", "STIXGeneralItalic", "STIXGeneralBolIta", "cmr10",
             "cmb10", "cmti10", "cmss10", "cmtt10")}


def glyphs(out: Path, size: int = 32, per_class=(300, 100), chars=GLYPHS, seed: int = 0) -> None:
    """pcn20's fresh set: letters in the fonts matplotlib ships, train and test typefaces
    disjoint (see the module docstring); pcn22's numerals: the same with ``chars`` = NUMERALS,
    ``seed`` 1."""
    import matplotlib
    from PIL import Image, ImageDraw, ImageFont

    fonts = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    rng = np.random.default_rng(seed)
    for (split, faces), count in zip(GLYPH_FONTS.items(), per_class):
        for face in faces:                    # every face must draw every letter (no .notdef box)
            font = ImageFont.truetype(str(fonts / f"{face}.ttf"), 24)
            notdef = bytes(font.getmask("\u4e00"))          # a CJK ideograph: none of them has it
            for letter in chars:
                mask = font.getmask(letter)
                if mask.getbbox() is None or bytes(mask) == notdef:
                    raise ValueError(f"{face} has no glyph for {letter!r}")
        for label in chars:
            folder = out / split / label
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                face = faces[rng.integers(len(faces))]
                font = ImageFont.truetype(str(fonts / f"{face}.ttf"), int(rng.integers(16, 27)))
                paper, ink = int(rng.integers(0, 81)), int(rng.integers(170, 256))
                if rng.random() < 0.5:
                    paper, ink = ink, paper
                big = Image.new("L", (2 * size, 2 * size), paper)
                centre = (size + rng.uniform(-4, 4), size + rng.uniform(-4, 4))
                ImageDraw.Draw(big).text(centre, label, fill=ink, font=font, anchor="mm")
                big = big.rotate(rng.uniform(-15, 15), resample=Image.BILINEAR, fillcolor=paper,
                                 center=centre)
                crop = np.asarray(big, dtype=np.float64)[size // 2:size // 2 + size,
                                                         size // 2:size // 2 + size]
                crop = np.clip(np.round(crop + rng.normal(0, 8, crop.shape)), 0, 255)
                Image.fromarray(crop.astype(np.uint8)).save(folder / f"{i:04d}.png")


def main(argv=None) -> None:
    args = list(argv if argv is not None else sys.argv[1:])
    skimage_only, textures, samples = "--skimage" in args, "--textures" in args, "--samples" in args
    rest, glyph, numerals = "--rest" in args, "--glyphs" in args, "--numerals" in args
    args = [a for a in args if a not in ("--skimage", "--textures", "--samples", "--rest",
                                         "--glyphs", "--numerals")]
    out = Path((args or ["heldout"])[0])
    if numerals:
        glyphs(out / "numerals", chars=NUMERALS, seed=1)
    elif glyph:
        glyphs(out / "glyphs")
    elif rest:
        sk_patches(out / "skrest", names=REST_GRAY, load=rest_image)
    elif samples:
        sk_patches(out / "samplegray", names=SAMPLE_GRAY, load=sample_image)
    elif textures:
        sk_patches(out / "sktextures", names=SKIMAGE_GRAY)
    elif skimage_only:
        sk_patches(out / "skpatches")
    else:
        digits(out / "digits-idx")
        patches(out / "patches")
    print(out)


if __name__ == "__main__":
    main()
