"""Faithfulness of the TFDual tokenizer (tools/eeg): order, codebooks, targets, losses, encoding."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cortexkit.tools.eeg import api, losses
from cortexkit.tools.eeg.model import (Attention, Backbone, PatchEmbed, TFDualTokenizer,
                                       TokenizerConfig, config_from_preset)
from cortexkit.tools.eeg.quantizer import NormEMAQuantizer, cosine_kmeans, l2norm
from cortexkit.tools.eeg.train import TrainConfig, learning_rate

torch.set_num_threads(1)


def tiny(**kw):
    return config_from_preset("tiny", channels=3, max_patches=4, codebook_size=16, **kw)


def test_patch_tokens_are_channel_major():
    config = tiny()
    embed = PatchEmbed(config).eval()
    x = torch.zeros(1, 3, 4, 200)
    x[0, 2, 1] = torch.randn(200)  # channel 2, patch 1 -> token 2*4+1 = 9
    h = embed(x)
    changed = (h[0] - h[0, 0]).abs().sum(-1) > 1e-6
    assert changed.nonzero().flatten().tolist() == [9]
    # the backbone adds pos_embed[c + 1] and time_embed[p] to token c*P + p (with no blocks, the
    # output is the LayerNorm of exactly that)
    backbone = Backbone(3, 4, 64, 0, 4, 4.0)
    tokens = torch.randn(2, 12, 64)
    out = backbone(tokens, 3, 4)
    for c in range(3):
        for p in range(4):
            expect = F.layer_norm(tokens[:, c * 4 + p] + backbone.pos_embed[0, c + 1]
                                  + backbone.time_embed[0, p], (64,), eps=1e-6)
            torch.testing.assert_close(out[:, c * 4 + p], expect)


def test_time_freq_sum_stem_adds_a_linear_map_of_the_forward_normalised_rfft():
    """The default stem is the conv stem plus Linear(|rfft(patch, norm='forward')|): a cosine of
    amplitude a at bin k has |rfft| a/2 at k (0 elsewhere), so the two stems differ by
    W[:, k] a/2 + b on that patch, where W, b are the frequency map's weight and bias."""
    torch.manual_seed(7)
    both, time_only = PatchEmbed(tiny()).eval(), PatchEmbed(tiny(stem="time")).eval()
    time_only.load_state_dict({k: v for k, v in both.state_dict().items() if not k.startswith("freq")})
    x = torch.zeros(1, 3, 4, 200)
    x[0, 1, 2] = 3.0 * torch.cos(2 * math.pi * 10 * torch.arange(200) / 200)  # bin 10, a = 3
    diff = both(x) - time_only(x)  # (1, 12, dim), token 1*4+2 = 6 holds the cosine
    torch.testing.assert_close(diff[0, 6], both.freq.weight[:, 10] * 1.5 + both.freq.bias,
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(diff[0, 0], both.freq.bias.detach())  # a zero patch: bias only


def test_sdpa_attention_equals_the_textbook_formula():
    torch.manual_seed(0)
    attn = Attention(16, 4)
    torch.nn.init.normal_(attn.q_bias)
    torch.nn.init.normal_(attn.v_bias)
    x = torch.randn(2, 5, 16)
    q = (x @ attn.qkv.weight[:16].t() + attn.q_bias).reshape(2, 5, 4, 4).transpose(1, 2)
    k = (x @ attn.qkv.weight[16:32].t()).reshape(2, 5, 4, 4).transpose(1, 2)
    v = (x @ attn.qkv.weight[32:].t() + attn.v_bias).reshape(2, 5, 4, 4).transpose(1, 2)
    weights = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1)
    expect = attn.proj((weights @ v).transpose(1, 2).reshape(2, 5, 16))
    torch.testing.assert_close(attn(x), expect)


def test_codewords_stay_unit_norm_after_every_ema_update():
    torch.manual_seed(1)
    q = NormEMAQuantizer(8, 4, decay=0.9).train()
    for _ in range(5):
        q(torch.randn(32, 4) * 3)
        torch.testing.assert_close(q.embedding.norm(dim=-1), torch.ones(8))


def test_nearest_by_l2_is_nearest_by_cosine_and_inputs_are_normalised():
    torch.manual_seed(2)
    q = NormEMAQuantizer(50, 8).eval()
    z = torch.randn(200, 8) * 5
    _, _, idx = q(z)
    cosine = (F.normalize(z, dim=-1) @ q.embedding.t()).argmax(-1)
    assert torch.equal(idx, cosine)
    l2 = torch.cdist(F.normalize(z, dim=-1), q.embedding).argmin(-1)
    assert torch.equal(l2, cosine)
    # codewords are unit-norm, so the winner is a cosine winner; scaled codewords would not be
    scaled = torch.cdist(F.normalize(z, dim=-1), q.embedding * torch.rand(50, 1) * 3).argmin(-1)
    assert not torch.equal(scaled, cosine)


def test_unused_code_unchanged_and_used_code_follows_the_ema_formula():
    torch.manual_seed(3)
    q = NormEMAQuantizer(4, 3, decay=0.99).train()
    before = q.embedding.clone()
    z = l2norm(before[0] + 0.05 * torch.randn(6, 3))  # all nearest to code 0
    _, _, idx = q(z)
    assert set(idx.tolist()) == {0}
    assert torch.equal(q.embedding[1:], before[1:])
    mean = l2norm(z.sum(0) / 6)
    torch.testing.assert_close(q.embedding[0], l2norm(0.99 * before[0] + 0.01 * mean))
    torch.testing.assert_close(q.cluster_size, torch.tensor([0.06, 0.0, 0.0, 0.0]))


def test_eval_mode_never_moves_the_codebook_and_loss_is_commitment_only():
    torch.manual_seed(4)
    q = NormEMAQuantizer(8, 4).eval()
    before = q.embedding.clone()
    z = torch.randn(10, 4, requires_grad=True)
    z_q, loss, idx = q(z)
    assert torch.equal(q.embedding, before)
    zn = F.normalize(z, dim=-1)
    torch.testing.assert_close(loss, F.mse_loss(before[idx], zn))
    torch.testing.assert_close(z_q, before[idx])  # straight-through: the value is the codeword
    z_q.sum().backward()  # ... and the gradient goes to z
    assert z.grad is not None and z.grad.abs().sum() > 0


def test_quantizer_stays_float32_under_bf16_autocast():
    """Mixed precision keeps the quantizers in fp32 (the paper's recipe): a bf16 input from an
    autocast region is quantized, compared and EMA-updated in float32, with fp32's result."""
    torch.manual_seed(6)
    fp32 = NormEMAQuantizer(512, 8).train()
    mixed = NormEMAQuantizer(512, 8).train()
    mixed.load_state_dict(fp32.state_dict())
    z = torch.randn(4096, 8).bfloat16()  # 512 codes in 8 dims: near ties a bf16 search would flip
    ref_q, ref_loss, ref_idx = fp32(z.float())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z_q, loss, idx = mixed(z)
    assert z_q.dtype == loss.dtype == mixed.embedding.dtype == torch.float32
    assert torch.equal(idx, ref_idx)
    torch.testing.assert_close(mixed.embedding, fp32.embedding, rtol=0, atol=0)
    torch.testing.assert_close(loss, ref_loss)


def test_kmeans_init_and_dead_code_restart():
    torch.manual_seed(5)
    centres = l2norm(torch.randn(4, 6))
    z = l2norm(centres.repeat(25, 1) + 0.01 * torch.randn(100, 6))
    means = cosine_kmeans(z, 4, generator=torch.Generator().manual_seed(0))
    assert (means @ centres.t()).max(dim=0).values.min() > 0.99  # every centre found
    q = NormEMAQuantizer(16, 6, kmeans_init=True, dead_code_threshold=0.5).train()
    q(z)
    assert bool(q.initted)
    dead_before = q.cluster_size < 0.5
    assert not dead_before.any()  # restarted codes got the threshold as their usage
    near = (q.embedding @ z.t()).max(dim=1).values
    assert (near > 0.99).all()  # every codeword now sits on data


def test_std_norm_uses_the_unbiased_std_per_sample():
    a = torch.randn(3, 2, 4, 5) * torch.tensor([1.0, 10.0, 100.0])[:, None, None, None]
    out = losses.std_norm(a)
    for i in range(3):
        flat = a[i].reshape(-1).double()
        mean = flat.mean()
        std = math.sqrt(float(((flat - mean) ** 2).sum()) / (flat.numel() - 1))
        torch.testing.assert_close(out[i].double(), (a[i].double() - mean) / std, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(out[0], (a[0] - a[0].mean()) / a[0].std(unbiased=False))


def test_fft_targets_have_200_bins_of_the_full_fft():
    x = torch.randn(2, 3, 4, 200)
    amplitude, phase = losses.fft_targets(x)
    assert amplitude.shape == phase.shape == (2, 3, 4, 200)
    full = torch.fft.fft(x, dim=-1)
    torch.testing.assert_close(amplitude, losses.std_norm(full.abs()))
    torch.testing.assert_close(phase, losses.std_norm(torch.angle(full)))
    # the mirrored half is there: amplitude bin k equals bin 200 - k
    torch.testing.assert_close(amplitude[..., 1:100], amplitude[..., 101:].flip(-1))


def test_nt_xent_equals_a_hand_computation_on_2x2():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    b = torch.tensor([[1.0, 1.0], [-1.0, 1.0]])
    views = [v / np.linalg.norm(v) for v in np.array([[1, 0], [0, 1], [1, 1], [-1, 1]], float)]
    total = 0.0
    for i in range(4):
        positive = (i + 2) % 4
        sims = {j: float(views[i] @ views[j]) / 0.1 for j in range(4) if j != i}
        total += -(sims[positive] - math.log(sum(math.exp(s) for s in sims.values())))
    assert float(losses.nt_xent(a, b, 0.1)) == pytest.approx(total / 4, rel=1e-6)


def test_loss_has_every_term_and_gradients_reach_the_encoder():
    torch.manual_seed(6)
    model = TFDualTokenizer(tiny()).train()
    terms = losses.tokenizer_loss(model, torch.randn(3, 3, 4, 200) * 0.3)
    assert {"vq_t", "vq_f", "signal", "amplitude", "phase", "ntxent"} <= set(terms)
    parts = sum(v for k, v in terms.items() if k not in ("total", "_tokens"))
    torch.testing.assert_close(terms["total"], parts)
    terms["total"].backward()
    assert model.encoder.patch_embed.conv.net[0].weight.grad.abs().sum() > 0
    assert model.quantize_t.embedding.grad is None  # codebooks learn by EMA only


def test_frequency_only_ablation_has_one_codebook_and_no_signal_decoder():
    model = TFDualTokenizer(tiny(codebooks="frequency"))
    assert not hasattr(model, "quantize_t") and not hasattr(model, "decoder_t")
    terms = losses.tokenizer_loss(model, torch.randn(2, 3, 4, 200))
    assert "signal" not in terms and "vq_t" not in terms and "amplitude" in terms


def test_learning_rate_warmup_then_cosine():
    assert learning_rate(0, 100, 10, 1e-3, 1e-5) == pytest.approx(1e-6)
    assert learning_rate(10, 100, 10, 1e-3, 1e-5) == pytest.approx(1e-3)
    assert learning_rate(55, 100, 10, 1e-3, 1e-5) == pytest.approx(1e-5 + 0.5 * (1e-3 - 1e-5))
    assert learning_rate(100, 100, 10, 1e-3, 1e-5) == pytest.approx(1e-5)


class _Batch:
    def __init__(self, x):
        self.x, self.starts, self.labels, self.source_index = x, np.arange(len(x), dtype=float), \
            ["a"] * len(x), 0


def test_training_reduces_the_loss_and_encoding_is_deterministic():
    rng = np.random.default_rng(0)
    t = np.arange(200) / 200
    x = np.stack([np.sin(2 * np.pi * rng.uniform(2, 30) * t + rng.uniform(0, 6)) * rng.uniform(0.2, 1)
                  for _ in range(16 * 12)]).reshape(16, 3, 4, 200).astype(np.float32)
    config = TrainConfig(epochs=6, batch_size=8, lr=2e-3, warmup_epochs=1)
    model, history = api.fit(x, tiny(kmeans_init=True), config, seed=0)
    assert history[-1]["total"] < history[0]["total"]
    first = api.encode_windows(model, [_Batch(x)])
    again = api.encode_windows(model, [_Batch(x[:5]), _Batch(x[5:])])  # other batching too
    assert np.array_equal(first.token_t, again.token_t)
    assert np.array_equal(first.token_f, again.token_f)
    assert first.token_t.shape == (16, 3, 4) and first.token_t.dtype == np.int16
    # the tokens are the codes nearest to what quantize() gives in eval mode
    out = model.eval().quantize(torch.from_numpy(x))
    assert np.array_equal(out["token_t"].reshape(16, 3, 4).numpy(), first.token_t)
    # state round trip keeps the tokens
    clone = api.from_state(model.config, api.state_tensors(model))
    assert np.array_equal(api.encode_windows(clone, [_Batch(x)]).token_f, first.token_f)
    # bf16 autocast: deterministic, and the tokens mostly those of fp32 (near ties may flip)
    half = api.encode_windows(model, [_Batch(x)], precision="bf16")
    assert np.array_equal(half.token_f, api.encode_windows(model, [_Batch(x)], precision="bf16").token_f)
    assert (half.token_t == first.token_t).mean() > 0.8 and (half.token_f == first.token_f).mean() > 0.8
    with pytest.raises(ValueError, match="fp32 or bf16"):
        model.encode(torch.from_numpy(x[:1]), "fp16")


def test_codebook_health_counts_and_mutual_information():
    from cortexkit.tools.eeg.analysis import codebook_health

    t = np.array([0, 0, 1, 1])
    independent = codebook_health(t, np.array([0, 1, 0, 1]), 4)
    assert independent["joint"]["pairs_used"] == 4
    assert independent["joint"]["mutual_information_nats"] == pytest.approx(0.0, abs=1e-12)
    copied = codebook_health(t, t.copy(), 4)
    assert copied["joint"]["mutual_information_nats"] == pytest.approx(math.log(2))
    assert copied["temporal"]["used"] == 2 and copied["temporal"]["perplexity"] == pytest.approx(2.0)


def _sines(n, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(200) / 200
    return np.stack([np.sin(2 * np.pi * rng.uniform(2, 30) * t + rng.uniform(0, 6)) * rng.uniform(0.2, 1)
                     for _ in range(n * 12)]).reshape(n, 3, 4, 200).astype(np.float32)


def test_keep_best_returns_the_best_validation_epoch_and_last_is_unchanged():
    """TrainConfig.keep='best' (the generalisation study's checkpoint variant) ends with the weights
    and codebooks of the epoch with the lowest validation score; 'last' (the paper's) is the same run
    with nothing reloaded, and scoring the validation windows does not change the training."""
    x, validation = _sines(12, 0), _sines(4, 1)
    kw = dict(epochs=5, batch_size=4, lr=0.3, min_lr=0.3, warmup_epochs=0)  # too high: a bumpy curve
    model = dict(kmeans_init=True, dead_code_threshold=1.0)
    # whether a given seed's curve ends at its minimum depends on the platform's float rounding
    # (seed 0 did on a fresh 2026-12-07 machine): take the first seed whose best epoch is not the last
    for seed in range(8):
        last, scored = api.fit(x, tiny(**model), TrainConfig(**kw), seed=seed, validation=validation)
        curve = [r["validation"] for r in scored]
        if int(np.argmin(curve)) + 1 < kw["epochs"]:
            break
    else:
        pytest.fail("no seed of 8 gave a validation curve whose best epoch is not the last")
    plain, _ = api.fit(x, tiny(**model), TrainConfig(**kw), seed=seed)
    for key, value in plain.state_dict().items():
        assert torch.equal(value, last.state_dict()[key]), key
    assert "kept_epoch" not in scored[-1]
    best, history = api.fit(x, tiny(**model), TrainConfig(keep="best", **kw), seed=seed,
                            validation=validation)
    assert [r["validation"] for r in history] == curve
    assert history[-1]["kept_epoch"] == int(np.argmin(curve)) + 1
    assert api.validation_score(best, validation) == pytest.approx(min(curve), rel=1e-6)
    with pytest.raises(ValueError, match="validation windows"):
        api.fit(x, tiny(), TrainConfig(keep="best", epochs=1), seed=0)
    with pytest.raises(ValueError, match="'last' or 'best'"):
        api.fit(x, tiny(), TrainConfig(keep="first", epochs=1), seed=0, validation=validation)


def test_encoder_dropout_is_off_by_default_and_only_acts_in_training():
    """TokenizerConfig.dropout: 0 (the paper's: no dropout) gives the same parameters as before; > 0
    changes the encoder's training-mode output and leaves eval mode deterministic."""
    torch.manual_seed(0)
    paper = TFDualTokenizer(tiny())
    torch.manual_seed(0)
    dropped = TFDualTokenizer(tiny(dropout=0.5))
    assert paper.state_dict().keys() == dropped.state_dict().keys()
    x = torch.from_numpy(_sines(2, 0))
    dropped.eval()
    assert torch.equal(dropped.encoder(x), paper.eval().encoder(x))
    dropped.train()
    torch.manual_seed(1)
    assert not torch.allclose(dropped.encoder(x), paper.encoder(x))


def test_signal_amplitude_loss_closed_forms():
    """losses.signal_amplitude_loss: mse of |rfft| (orthonormal) of the decoded signal against the
    patch's; blind to a circular shift (same magnitudes), and for a unit sine against silence
    |X_5| = sqrt(200)/2 in one of 101 bins: 50 / 101, beside the time mse of 0.5."""
    x = torch.randn(2, 3, 4, 200)
    assert float(losses.signal_amplitude_loss(x, x)) == pytest.approx(0.0, abs=1e-6)
    shifted = torch.roll(x, 7, dims=-1)
    assert float(losses.signal_amplitude_loss(shifted, x)) == pytest.approx(0.0, abs=1e-5)
    assert float(F.mse_loss(shifted, x)) > 1.0
    sine = torch.sin(2 * math.pi * 5 * torch.arange(200) / 200).expand(1, 1, 1, 200)
    assert float(losses.signal_amplitude_loss(torch.zeros_like(sine), sine)) == pytest.approx(50 / 101, rel=1e-5)
    assert float(F.mse_loss(torch.zeros_like(sine), sine)) == pytest.approx(0.5, rel=1e-5)
    zero = torch.zeros(1, 1, 1, 200, requires_grad=True)  # differentiable where the signal is silent
    losses.signal_amplitude_loss(zero, sine).backward()
    assert torch.isfinite(zero.grad).all()


def test_signal_amplitude_weight_adds_its_term_and_is_off_by_default():
    torch.manual_seed(6)
    model = TFDualTokenizer(tiny()).eval()  # eval: the codebooks do not move between the calls
    x = torch.randn(3, 3, 4, 200) * 0.3
    off = losses.tokenizer_loss(model, x, contrastive=False)
    on = losses.tokenizer_loss(model, x, contrastive=False, signal_amplitude_weight=0.25)
    assert "signal_amplitude" not in off
    recon = model.decode({"t": model.quantize(x)["z_q_t"], "f": model.quantize(x)["z_q_f"]}, 3, 4)
    torch.testing.assert_close(on["signal_amplitude"], losses.signal_amplitude_loss(recon["signal"], x))
    torch.testing.assert_close(on["total"], off["total"] + 0.25 * on["signal_amplitude"])
    assert TrainConfig().signal_amplitude_weight == 0.0  # the paper's objective unless asked


def test_amplitude_head_is_trained_on_rfft_and_is_the_tokens_only_read_out():
    """TokenizerConfig.amplitude_head (issue 33, eeg20): the temporal decoder gets a second head
    whose first L//2+1 outputs are asked for |rfft(x)| (orthonormal) at weight 1, and the
    tokens-only amplitude (``amplitude_nmse_signal``) reads that head, clamped at 0, on rfft's
    scale; |rfft(x_hat)| stays in ``amplitude_nmse_signal_rfft``. Off (the paper's model): no head,
    no term, and the two read-outs coincide."""
    from cortexkit.tools.eeg.analysis import Reconstruction

    assert TokenizerConfig().amplitude_head is False
    torch.manual_seed(3)
    plain = TFDualTokenizer(tiny()).eval()
    torch.manual_seed(3)
    headed = TFDualTokenizer(tiny(amplitude_head=True)).eval()
    extra = set(headed.state_dict()) - set(plain.state_dict())
    assert extra and all(k.startswith("decoder_t.heads.signal_amplitude.") for k in extra)
    x = torch.randn(2, 3, 4, 200) * 0.3
    off = losses.tokenizer_loss(plain, x, contrastive=False)
    on = losses.tokenizer_loss(headed, x, contrastive=False)
    assert "amplitude_head" not in off
    out = headed.quantize(x)
    recon = headed.decode({"t": out["z_q_t"], "f": out["z_q_f"]}, 3, 4)
    target = torch.fft.rfft(x, dim=-1, norm="ortho").abs()
    torch.testing.assert_close(on["amplitude_head"],
                               F.mse_loss(recon["signal_amplitude"][..., :101], target))
    assert float(on["amplitude_head"]) > 0
    # the read-out: a head that predicts |rfft| exactly gives 0, whatever the waveform
    perfect = dict(recon, signal_amplitude=torch.cat([target, -torch.ones(2, 3, 4, 99)], dim=-1))
    scores = Reconstruction(200)
    scores.add(x, perfect)
    result = scores.result(dual=True)
    assert result["amplitude_nmse_signal"] == pytest.approx(0.0, abs=1e-10)
    assert result["amplitude_nmse_signal_rfft"] > 0.1
    scores = Reconstruction(200)
    scores.add(x, {k: v for k, v in perfect.items() if k != "signal_amplitude"})
    result = scores.result(dual=True)
    assert result["amplitude_nmse_signal"] == result["amplitude_nmse_signal_rfft"] > 0.1


def test_detached_amplitude_decoder_leaves_tokens_and_waveform_untouched():
    """TokenizerConfig.amplitude_head_detach: the amplitude comes from decoder_a on the detached
    temporal codes, built last (every other parameter starts as without it), so its term sends no
    gradient to the encoder, heads, codebooks or decoder_t."""
    torch.manual_seed(4)
    plain = TFDualTokenizer(tiny()).eval()
    torch.manual_seed(4)
    detached = TFDualTokenizer(tiny(amplitude_head=True, amplitude_head_detach=True)).eval()
    state = detached.state_dict()
    assert all(torch.equal(v, state[k]) for k, v in plain.state_dict().items())
    assert {k.split(".")[0] for k in set(state) - set(plain.state_dict())} == {"decoder_a"}
    assert "signal_amplitude" not in detached.decoder_t.heads
    x = torch.randn(2, 3, 4, 200) * 0.3
    terms = losses.tokenizer_loss(detached, x, contrastive=False)
    terms["amplitude_head"].backward()
    grads = {name: p.grad for name, p in detached.named_parameters()}
    assert any(g is not None and g.abs().sum() > 0 for n, g in grads.items() if n.startswith("decoder_a."))
    assert all(g is None or g.abs().sum() == 0 for n, g in grads.items() if not n.startswith("decoder_a."))


def test_kmeans_floor_reports_the_cluster_mean_amplitude_read_out():
    """floor.kmeans_floor's information-only amplitude_nmse_cluster_mean: each temporal cluster's
    mean |rfft| of its training patches; with one cluster per distinct training patch and the test
    patches copies of them, it is exact (0) while the centroid read-out is too."""
    from cortexkit.tools.eeg.floor import kmeans_floor

    rng = np.random.default_rng(0)
    train = rng.normal(size=(8, 1, 1, 200)).astype(np.float32)
    floor = kmeans_floor(train, train[:3], 8, seed=0)
    assert floor["amplitude_nmse_cluster_mean"] == pytest.approx(0.0, abs=1e-8)
    noisy = train[:3] + 0.5 * rng.normal(size=(3, 1, 1, 200)).astype(np.float32)
    floor = kmeans_floor(train, noisy, 8, seed=0)
    assert floor["amplitude_nmse_cluster_mean"] > 0


def test_train_floor_check_reads_kmeans_amplitude_at_its_best():
    """api.compare_with_floor (train's warning): the k-means amplitude it compares with is the best of
    floor.kmeans_floor's three token-id read-outs of the same fit, and it names the one it took; on
    these random sines the cluster-mean read-out beats both centroids' (a centroid of out-of-phase sines
    is smaller than each), so the floor is not the centroid's."""
    from cortexkit.tools.eeg.floor import kmeans_floor

    x, held = _sines(40, 1), _sines(3, 11)
    model = TFDualTokenizer(tiny(kmeans_init=True, depth=0)).eval()
    out = api.compare_with_floor(model, x, held, seed=0)
    floor = kmeans_floor(x.reshape(-1, 1, 1, 200), held, 16, seed=0, iterations=15)
    readouts = {"centroid": floor["amplitude_nmse_signal"], "log_amplitude_centroid": floor["amplitude_nmse"],
                "cluster_mean": floor["amplitude_nmse_cluster_mean"]}
    assert out["kmeans"]["amplitude_nmse_signal"] == pytest.approx(min(readouts.values()), rel=1e-12)
    assert out["kmeans_amplitude_readout"] == min(readouts, key=readouts.get) == "cluster_mean"
    assert out["kmeans"]["time_nmse"] == pytest.approx(floor["time_nmse"], rel=1e-12)


def test_warm_start_begins_training_at_the_kmeans_floor():
    """TrainConfig.warm_start_epochs (tools/eeg/warmstart.py): before any epoch of the paper's
    training, the tokens follow the k-means partition of the patches and the decoders reproduce its
    centroids, so the tokens-only time NMSE of the fitted windows is near the k-means floor of the
    same codebook size, where the random start is not; 0 (the default) leaves the start untouched."""
    from cortexkit.tools.eeg.floor import kmeans_floor

    x = _sines(24, 0)
    floor = kmeans_floor(x, x, 16, seed=0)["time_nmse"]
    config = dict(lr=3e-3, batch_size=8, warmup_epochs=0)
    cold, _ = api.fit(x, tiny(kmeans_init=True, depth=0), TrainConfig(epochs=1, **config), seed=0)
    warm, history = api.fit(x, tiny(kmeans_init=True, depth=0),
                            TrainConfig(epochs=0, warm_start_epochs=40, **config), seed=0)
    assert history == [{"epoch": 0, "warm_start": history[0]["warm_start"]}]
    report = history[0]["warm_start"]
    assert report["steps"] == 120 and report["agreement_t"] > 0.9 and report["agreement_f"] > 0.5
    assert api.validation_score(cold, x) > 1.15 * floor
    assert api.validation_score(warm, x) < 1.1 * floor
    assert bool(warm.quantize_t.initted) and bool(warm.quantize_f.initted)
    assert TrainConfig().warm_start_epochs == 0


def test_warm_start_kmeans_size_reaches_the_floor_fit(monkeypatch):
    """TrainConfig.warm_start_kmeans_patches / _iterations set the k-means the warm start maps to
    (defaults 4096 patches, 8 Lloyd iterations, the adopted warm start's)."""
    from cortexkit.tools.eeg import warmstart

    seen = []
    real = warmstart.floor_assignments

    def spy(x, k, **kwargs):
        seen.append((kwargs["max_patches"], kwargs["iterations"]))
        return real(x, k, **kwargs)

    monkeypatch.setattr(warmstart, "floor_assignments", spy)
    x = _sines(8, 0)
    config = dict(lr=3e-3, batch_size=8, warmup_epochs=0, epochs=0, warm_start_epochs=1)
    api.fit(x, tiny(kmeans_init=True, depth=0), TrainConfig(**config), seed=0)
    api.fit(x, tiny(kmeans_init=True, depth=0), TrainConfig(
        warm_start_kmeans_patches=100, warm_start_kmeans_iterations=3, **config), seed=0)
    assert seen == [(4096, 8), (100, 3)]


def test_random_crop_cuts_each_window_at_a_sub_patch_offset_and_jitter_scales_whole_windows():
    """TrainConfig.random_crop / amplitude_jitter (issue 33 augmentation study): a crop is a
    contiguous P-patch slice of its (P+1)-patch window from an offset in [0, L); the gain is one
    factor per window within [1/(1+j), 1+j]; training refuses windows without the context patch."""
    from cortexkit.tools.eeg.train import augment, random_crops

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, 5, 200)
    crops = random_crops(x, generator)
    assert crops.shape == (64, 3, 4, 200)
    flat, cut = x.reshape(64, 3, 1000), crops.reshape(64, 3, 800)
    offsets = []
    for b in range(64):
        offset = next(o for o in range(200) if torch.equal(flat[b, 0, o:o + 800], cut[b, 0]))
        assert torch.equal(flat[b, :, offset:offset + 800], cut[b])
        offsets.append(offset)
    assert len(set(offsets)) > 40  # the offsets vary between windows
    scaled = augment(x[:, :, :4], TrainConfig(amplitude_jitter=0.25), generator)
    gain = scaled / x[:, :, :4]
    assert torch.allclose(gain, gain[:, :1, :1, :1].expand_as(gain), rtol=1e-4)
    assert gain.min() >= 0.8 - 1e-5 and gain.max() <= 1.25 + 1e-5 and gain.std() > 0.05
    assert TrainConfig().random_crop is False and TrainConfig().amplitude_jitter == 0
    with pytest.raises(ValueError, match="random_crop needs windows of 5 patches"):
        api.fit(x[:, :, :4].numpy(), tiny(), TrainConfig(epochs=1, random_crop=True), seed=0)
    model, history = api.fit(x[:16].numpy(), tiny(), TrainConfig(epochs=1, batch_size=8,
                                                                 random_crop=True), seed=0)
    assert len(history) == 1 and math.isfinite(history[0]["total"])


def test_no_training_crop_contains_a_validation_sample(monkeypatch):
    """With random crop, train's path (api.train_tokenizer, what `tokenize-eeg train` calls) never
    feeds the loss a sample of a validation window (issue 33, eeg17): a fitted window whose context
    patch is the next (validation) window's first second is cut at offset 0 only. Channel 0 of one
    continuous recording carries each sample's index, so every training batch is checked sample by
    sample; the same windows trained without ``croppable`` (the crops before the fix) do leak."""
    import types

    from cortexkit.formats import eeg
    from cortexkit.tools.eeg import train as train_module

    n, patches, length = 40, 4, 200
    total = n * patches * length + length  # windows every 4 s, each with 1 s of context
    rng = np.random.default_rng(0)
    signal = rng.normal(0, 0.3, (3, total)).astype(np.float32)
    signal[0] = np.arange(total) / total
    x = np.stack([signal[:, i * patches * length:(i * patches + patches + 1) * length]
                  for i in range(n)]).reshape(n, 3, patches + 1, length)
    _, validation_index = api.validation_split(n, 0.1)
    held = np.zeros(total, bool)
    for j in validation_index:
        held[j * patches * length:(j + 1) * patches * length] = True
    seen = []
    real_loss = train_module.tokenizer_loss

    def spy(model, batch, **kwargs):
        seen.append(np.rint(batch[:, 0].reshape(len(batch), -1).numpy() * total).astype(int))
        return real_loss(model, batch, **kwargs)

    monkeypatch.setattr(train_module, "tokenizer_loss", spy)
    log = types.SimpleNamespace(info=lambda *a, **k: None, warn=lambda *a, **k: None,
                                progress=lambda it, **k: it, stopped=lambda *a, **k: None,
                                seed=0, device=torch.device("cpu"))
    options = dict(epochs=3, batch_size=8, min_lr=1e-5, weight_decay=1e-4, warmup_epochs=1,
                   contrastive=False, amp=False, signal_weight=1.0, warm_start_epochs=0, random_crop=True)
    api.train_tokenizer(log, x, eeg.Preprocessing(channels=["Fp1", "Fp2", "Cz"], patches=patches),
                        preset="tiny", encoder_depth=0, codebook_size=16, lr=1e-3, validation_share=0.1,
                        model_options=dict(kmeans_init=True, dead_code_threshold=1.0, codebooks="dual",
                                           stem="time+freq-sum"),
                        train_options=options, training_record={})
    crops = np.concatenate(seen)
    assert len(crops) == 3 * (n - len(validation_index))
    assert not held[crops].any()
    starts = crops[:, 0] % (patches * length)  # the crops' offsets within their windows
    assert (starts > 0).mean() > 0.8  # the other windows are still cropped at random offsets
    before = {int(j - 1) * patches * length for j in validation_index}  # their windows, at offset 0
    assert before <= set(crops[:, 0].tolist())
    # the check can fail: the same windows with every window croppable (before the fix) leak
    seen.clear()
    fit_index = np.setdiff1d(np.arange(n), validation_index)
    api.fit(x[fit_index], tiny(depth=0, kmeans_init=True),
            TrainConfig(**{**options, "lr": 1e-3, "epochs": 3}), seed=0)
    assert held[np.concatenate(seen)].any()
