"""cortexkit train-pcn through the installed console script: pipelines, torchrun, bad input.

Data are tiny synthetic image sets (a bright patch whose position is the class) so every run
takes seconds; the man page's examples run on a 600-image cut of the shipped MNIST file with
one epoch and a shallow net (sizes shrunk from the page's)."""

import subprocess
import sys

import numpy as np
import pytest
import yaml

TOOL = "train-pcn"


def make_images(n=96, classes=3, size=8, channels=1, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % classes
    images = rng.integers(0, 60, (n, channels, size, size), dtype=np.uint8)
    for i, c in enumerate(labels):
        images[i, :, 2 * c:2 * c + 3, 1:4] = 230
    return images, labels.astype(np.int64)


def write_set(path, images, labels=None, *, nhwc=False, classes=None):
    from safetensors.numpy import save_file

    tensors = {"images": images.transpose(0, 2, 3, 1).copy() if nhwc else images}
    if labels is not None:
        tensors["labels"] = labels
    save_file(tensors, str(path), metadata={"classes": ",".join(classes)} if classes else None)
    return path


@pytest.fixture
def data(tmp_path):
    images, labels = make_images()
    train = write_set(tmp_path / "train.safetensors", images, labels, nhwc=True,
                      classes=["top", "mid", "low"])
    test = write_set(tmp_path / "test.safetensors", *make_images(48, seed=1))
    return train, test


FAST = ["--depth", "3", "--width", "16", "--epochs", "2", "--batch-size", "16", "--lr", "0.01",
        "--steps", "2", "--seed", "1"]


def test_train_evaluate_predict_pipeline(cli, sh, data, tmp_path):
    train, test = data
    model, log, ckpt, png = (tmp_path / n for n in ("m.safetensors", "log.yaml", "c.safetensors",
                                                    "p.png"))
    p = cli(TOOL, "train", train, "--test", test, *FAST, "--log", log, "--checkpoint", ckpt,
            "--plot", png, "-o", model)
    assert p.returncode == 0, p.stderr
    from safetensors.numpy import load_file, safe_open

    tensors = load_file(model)
    assert tensors["blocks.0.layer.weight"].shape == (16, 64)
    assert tensors["blocks.2.layer.weight"].shape == (3, 16)
    with safe_open(model, "np") as fh:
        meta = fh.metadata()
    assert meta["cortexkit.kind"] == "pcn-model"
    network = yaml.safe_load(meta["pcn.network"])
    assert network["in_shape"] == [1, 8, 8] and network["class_names"] == ["top", "mid", "low"]
    # weight normalisation is on for meta-pcn, at the default per-layer rule fan: every stored
    # layer has proxy 1 + sqrt(m / n) (unit root-mean-square gain)
    for i in range(3):
        w = tensors[f"blocks.{i}.layer.weight"].astype(np.float64)
        m, n = w.shape
        assert (np.sqrt(m) + np.sqrt(n)) * w.std() == pytest.approx(1 + np.sqrt(m / n), rel=1e-5)
    records = yaml.safe_load(log.read_text())
    assert [r["epoch"] for r in records] == [1, 2]
    assert all(len(r["layer_energy"]) == 3 and r["test_top1"] is not None for r in records)
    assert png.stat().st_size > 1000 and ckpt.stat().st_size > 1000

    rep = cli(TOOL, "evaluate", model, test)
    assert rep.returncode == 0, rep.stderr
    report = yaml.safe_load(rep.stdout)
    assert report["examples"] == 48 and report["method"] == "meta-pcn"
    assert report["top1"] == pytest.approx(records[-1]["test_top1"])
    assert report["top1"] > 0.5 and report["top5"] == 1.0
    assert len(report["layer_energy"]) == 3

    # across two tools: predictions as a table artifact into convert
    out = sh(f"cortexkit {TOOL} predict {model} {test} | cortexkit convert --tensor label - "
             f"{tmp_path / 'labels.csv'}")
    assert out.returncode == 0, out.stderr
    # convert writes a categorical column back as its level strings (the class names)
    names = (tmp_path / "labels.csv").read_text().split()[1:]
    predicted = np.array([["top", "mid", "low"].index(n) for n in names], dtype=np.int64)
    truth = make_images(48, seed=1)[1]
    assert np.mean(predicted == truth) == pytest.approx(report["top1"])
    csv = cli(TOOL, "predict", model, test, "-o", tmp_path / "p.csv")
    assert csv.returncode == 0, csv.stderr
    header = (tmp_path / "p.csv").read_text().splitlines()[0].split(",")
    assert header == ["label", "logit_top", "logit_mid", "logit_low"]


def test_model_through_stdin_and_baselines(sh, data, tmp_path):
    train, test = data
    for method in ("bp", "ipc"):  # pc runs in the man-page test
        out = sh(f"cortexkit {TOOL} train {train} {' '.join(FAST)} --method {method} -q "
                 f"| cortexkit {TOOL} evaluate - {test}")
        assert out.returncode == 0, (method, out.stderr)
        report = yaml.safe_load(out.stdout)
        assert report["method"] == method and 0 <= report["top1"] <= 1


def test_same_seed_same_bytes_and_depth_warning(cli, data, tmp_path):
    train, _ = data
    a = tmp_path / "a.st"
    args = ["--depth", "5", "--width", "8", "--epochs", "1", "--batch-size", "32",
            "--steps", "2", "--state-lr", "0.5", "-o", a]
    pa = cli(TOOL, "train", train, *args)
    assert pa.returncode == 0, pa.stderr
    first = a.read_bytes()
    pb = cli(TOOL, "train", train, *args)
    assert pb.returncode == 0, pb.stderr
    assert a.read_bytes() == first
    assert "warning: T * eta_x = 2 * 0.5 is small for 5 layers" in pa.stderr


def test_torchrun_two_processes_match_one(cortexkit_exe, cli, data, tmp_path):
    pytest.importorskip("torch.distributed")
    train, _ = data
    args = ["--depth", "3", "--width", "12", "--epochs", "1", "--batch-size", "32", "--steps", "3",
            "--method", "ipc", "--weight-norm", "--dtype", "float64", "--seed", "3"]
    one = cli(TOOL, "train", train, *args, "-o", tmp_path / "one.st")
    assert one.returncode == 0, one.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
         "--nproc-per-node", "2", cortexkit_exe, TOOL, "train", str(train), *args,
         "-o", str(tmp_path / "two.st")],
        capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    from safetensors.numpy import load_file

    a, b = load_file(tmp_path / "one.st"), load_file(tmp_path / "two.st")
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-9, atol=1e-12, err_msg=name)
    assert not np.array_equal(a["blocks.0.layer.weight"],
                              load_file(_retrain(cli, train, args, tmp_path))["blocks.0.layer.weight"])


def _retrain(cli, train, args, tmp_path):
    """The same run with another seed, so the match above is not a coincidence of no training."""
    path = tmp_path / "other.st"
    p = cli(TOOL, "train", train, *args[:-1], "4", "-o", path)
    assert p.returncode == 0, p.stderr
    return path


def test_man_page_examples_on_shipped_mnist(cli, sh, shared_data, tmp_path):
    """The page's MNIST lines, on a 600/300-image cut of the shipped file, depth 3, one epoch."""
    from safetensors.numpy import load_file, save_file

    full = load_file(shared_data / "pcn" / "mnist_png_train10k_test10k.safetensors")
    rng = np.random.default_rng(0)
    tr, te = rng.permutation(10000)[:600], rng.permutation(10000)[:300]
    save_file({"train_x": full["train_x"][tr], "train_y": full["train_y"][tr],
               "test_x": full["test_x"][te], "test_y": full["test_y"][te]},
              str(tmp_path / "mnist.safetensors"))
    lines = [
        f"cortexkit {TOOL} train mnist.safetensors --split train --test mnist.safetensors "
        "--arch mlp --depth 3 --epochs 1 --log log.yaml --plot pcn.png -o meta.safetensors",
        f"cortexkit {TOOL} evaluate meta.safetensors mnist.safetensors --split test",
        f"cortexkit {TOOL} train mnist.safetensors --method bp --weight-norm --depth 3 "
        "--epochs 1 -o bpwn.safetensors",
        f"cortexkit {TOOL} train mnist.safetensors --method pc --depth 3 --epochs 1 "
        "-o pc.safetensors",
    ]
    outputs = []
    for line in lines:
        out = sh(line, cwd=tmp_path)
        assert out.returncode == 0, (line, out.stderr)
        outputs.append(out.stdout)
    report = yaml.safe_load(outputs[1])
    assert report["examples"] == 300 and report["top1"] > 0.2  # chance is 0.1 (5 weight steps)
    assert (tmp_path / "pcn.png").exists() and (tmp_path / "bpwn.safetensors").exists()


# ---------------------------------------------------------------------------------------------
# bad input: one line, nothing written

@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """One small trained model shared by the bad-input tests."""
    from cortexkit.cli.main import main

    folder = tmp_path_factory.mktemp("model")
    train = write_set(folder / "train.st", *make_images())
    path = folder / "model.st"
    with pytest.raises(SystemExit) as done:
        main([TOOL, "train", str(train), *FAST, "--epochs", "1", "-q", "-o", str(path)])
    assert done.value.code == 0
    return path


def test_bad_training_input(cli, one_line_error, tmp_path):
    images, labels = make_images(20)
    short = write_set(tmp_path / "short.st", images, labels[:19])
    out = tmp_path / "never.st"
    p = cli(TOOL, "train", short, "-o", out)
    one_line_error(p, f"{TOOL} train", "20 images but 19 labels")
    assert not out.exists()
    named = write_set(tmp_path / "named.st", images, labels + 1, classes=["a", "b", "c"])
    one_line_error(cli(TOOL, "train", named, "-o", out), f"{TOOL} train",
                   "label 3 is outside the 3 classes the set names (a, b, c)")
    good = write_set(tmp_path / "good.st", images, labels)
    big = write_set(tmp_path / "big.st", *make_images(6, size=10))
    one_line_error(cli(TOOL, "train", good, "--test", big, "--log", tmp_path / "never.yaml",
                       "-o", out), f"{TOOL} train", "test data: images are [1, 10, 10]")
    assert not (tmp_path / "never.yaml").exists()
    floats = write_set(tmp_path / "float.st", images.astype(np.float32), labels)
    one_line_error(cli(TOOL, "train", floats, "-o", out), f"{TOOL} train", "uint8")
    one_line_error(cli(TOOL, "train", tmp_path / "missing.st", "-o", out), f"{TOOL} train",
                   "no such file")
    (tmp_path / "trunc.st").write_bytes(short.read_bytes()[:100])
    one_line_error(cli(TOOL, "train", tmp_path / "trunc.st", "-o", out), f"{TOOL} train")
    one_line_error(cli(TOOL, "train", short, "-o", tmp_path / "no" / "dir.st"), f"{TOOL} train",
                   "cannot write")
    assert not out.exists()


def test_divergence_names_epoch_and_layer_and_keeps_checkpoint(cli, data, one_line_error,
                                                              tmp_path):
    train, _ = data
    ckpt, out = tmp_path / "c.st", tmp_path / "never.st"
    ok = cli(TOOL, "train", train, *FAST, "--epochs", "1", "--checkpoint", ckpt, "-o", out)
    assert ok.returncode == 0, ok.stderr
    out.unlink()
    before = ckpt.read_bytes()
    p = cli(TOOL, "train", train, *FAST, "--method", "bp", "--no-weight-norm", "--lr", "1e30",
            "--checkpoint", ckpt, "-o", out)
    one_line_error(p, f"{TOOL} train", "non-finite", "at epoch 1, layer")
    assert not out.exists() and ckpt.read_bytes() == before


def test_checkpoint_outlives_a_run_that_fails_after_an_epoch(sh, data, tmp_path):
    """The run finishes its epochs, then fails writing -o to a closed pipe: every staged output
    (-o, --log) is gone, but the checkpoint of the last finished epoch must stay (issue 16)."""
    train, _ = data
    ckpt, log = tmp_path / "c.st", tmp_path / "log.yaml"
    p = sh(f"cortexkit {TOOL} train {train} {' '.join(FAST)} --checkpoint {ckpt} --log {log} -q "
           "| true")
    assert p.returncode == 141, p.stderr  # a closed pipe: quiet, SIGPIPE's status (issue 30 item 9)
    assert not log.exists()
    from cortexkit.formats.artifact import read_artifact

    history = read_artifact(ckpt, "pcn-model").meta_json("pcn.history")
    assert [r["epoch"] for r in history] == [1, 2]
    assert sorted(q.name for q in tmp_path.iterdir()) == ["c.st", "test.safetensors",
                                                           "train.safetensors"]


def test_secondary_outputs_are_checked_by_the_base_before_work(cli, data, one_line_error,
                                                               tmp_path):
    train, _ = data
    for flag in ("--log", "--checkpoint", "--plot"):
        p = cli(TOOL, "train", train, *FAST, flag, tmp_path / "nodir" / "x", "-o", tmp_path / "m.st")
        one_line_error(p, f"{TOOL} train", f"{flag} {tmp_path / 'nodir' / 'x'}", "does not exist")
    p = cli(TOOL, "train", train, *FAST, "--log", tmp_path / "same", "--checkpoint",
            tmp_path / "same", "-o", tmp_path / "m.st")
    one_line_error(p, f"{TOOL} train", "the same file")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["test.safetensors", "train.safetensors"]


def test_bad_evaluation_input(cli, model, one_line_error, tmp_path):
    images, labels = make_images(12)
    wrong = write_set(tmp_path / "wrong.st", images, labels + 5)
    one_line_error(cli(TOOL, "evaluate", model, wrong), f"{TOOL} evaluate",
                   "label 7 is outside the model's 3 classes")
    big = write_set(tmp_path / "big.st", *make_images(12, size=10))
    one_line_error(cli(TOOL, "evaluate", model, big), f"{TOOL} evaluate",
                   "images are [1, 10, 10]", "takes [1, 8, 8]")
    one_line_error(cli(TOOL, "predict", model, big), f"{TOOL} predict", "takes [1, 8, 8]")
    # a model artifact of another kind: a table
    from cortexkit.formats.table import Table, write_table

    write_table(tmp_path / "table.st", Table({"a": np.arange(3.0)}))
    one_line_error(cli(TOOL, "evaluate", tmp_path / "table.st", wrong), f"{TOOL} evaluate",
                   "expected a 'pcn-model' artifact, got 'table'")
    (tmp_path / "empty.st").write_bytes(b"")
    one_line_error(cli(TOOL, "predict", tmp_path / "empty.st", wrong), f"{TOOL} predict", "empty")


def test_predict_without_labels_from_image_folder(cli, model, tmp_path):
    from PIL import Image

    images, labels = make_images(9, seed=4)
    for i, (img, c) in enumerate(zip(images, labels)):
        folder = tmp_path / "folder" / f"class{c}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img[0]).save(folder / f"{i}.png")
    p = cli(TOOL, "predict", model, tmp_path / "folder", "-o", tmp_path / "p.csv")
    assert p.returncode == 0, p.stderr
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 10


def test_print_config_and_help(cli):
    p = cli(TOOL, "train", "--print-config")
    assert p.returncode == 0, p.stderr
    config = yaml.safe_load(p.stdout)
    assert config["method"] == "meta-pcn" and config["steps"] == 3  # L - 1 at the default depth 4
    h = cli(TOOL, "train", "--help")
    assert h.returncode == 0 and len(h.stdout.decode().splitlines()) < 60
