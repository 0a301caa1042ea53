"""The pointer head (AR Lehmer digits scored against the still-free items) and feature context."""

import itertools

import pytest
import torch

from cortexkit.tools.permutations import model as M
from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R

S4 = torch.tensor(list(itertools.permutations(range(4))))


def pointer_net(n=4, dim=8, encoder="linear"):
    torch.manual_seed(0)
    net = N.PermutationTransformer(N.NetConfig(n, "lehmer", "ar", d_model=16, layers=1, heads=2, ff=32,
                                               dropout=0.0, context_dim=dim, context_len=n,
                                               context_aligned=True, head="pointer",
                                               context_encoder=encoder)).eval()
    with torch.no_grad():  # a non-trivial random head (the default init is near uniform)
        net.item_embedding.normal_(0, 3.0)
        net.item_bias.normal_(0, 1.0)
    return net


@pytest.mark.parametrize("encoder", ["linear", "mlp"])
def test_pointer_head_is_normalised_on_s4_and_beam_is_exact(encoder):
    net = pointer_net(encoder=encoder)
    codes = R.lehmer_encode(S4)
    ctx = torch.randn(3, 4, 8, generator=torch.Generator().manual_seed(1))
    for b in range(3):
        c = ctx[b:b + 1].expand(24, 4, 8)
        logp = N.log_prob_codes(net, codes, context=c)
        assert abs(float(logp.exp().sum()) - 1) < 1e-5
        best, score = N.beam_search_codes(net, 1, beam_width=24, keep=24, context=ctx[b:b + 1])
        assert torch.equal(best[0, 0], codes[logp.argmax()])  # exact argmax by enumeration
        assert torch.allclose(score[0], logp.sort(descending=True).values, atol=1e-6)
        assert len({tuple(r) for r in best[0].tolist()}) == 24


def test_free_items_point_at_the_decoded_item_and_rows_are_causal():
    net = pointer_net()
    codes = R.lehmer_encode(S4)
    free = N.free_items(codes)
    assert torch.equal(free.gather(2, codes[:, :, None])[..., 0], R.lehmer_decode(codes))
    ctx = torch.randn(1, 4, 8).expand(24, 4, 8)
    with torch.no_grad():
        a = net(codes, ctx)
        for j in range(4):  # changing digits >= j leaves rows <= j unchanged
            other = codes.clone()
            other[:, j:] = codes[torch.randperm(24), j:]
            assert torch.allclose(net(other, ctx)[:, :j + 1], a[:, :j + 1], atol=1e-5)


def test_pointer_head_has_the_linear_heads_size():
    base = dict(n=9, representation="lehmer", mode="ar", context_dim=81, context_len=9, context_aligned=True)
    sizes = [sum(p.numel() for p in N.PermutationTransformer(N.NetConfig(**base, head=h)).parameters())
             for h in ("linear", "pointer")]
    assert sizes[0] == sizes[1]


@pytest.mark.parametrize("change,fragment", [
    (dict(mode="mlm"), "autoregressive"), (dict(representation="insertion"), "lehmer"),
    (dict(context_aligned=False), "aligned"), (dict(context_dim=0), "aligned"),
])
def test_pointer_head_rejects_other_settings(change, fragment):
    config = dict(n=4, representation="lehmer", mode="ar", context_dim=3, context_len=4,
                  context_aligned=True, head="pointer")
    with pytest.raises(ValueError, match=fragment):
        N.PermutationTransformer(N.NetConfig(**{**config, **change}))


def test_feature_context_model_round_trips_bit_identically():
    """fit -> to_tensors -> from_tensors keeps head and encoder: identical log-likelihoods."""
    g = torch.Generator().manual_seed(0)
    x = torch.stack([torch.randperm(4, generator=g) for _ in range(64)])
    ctx = torch.randn(64, 4, 5, generator=g)
    fitted = M.fit(x, "ar", representation="lehmer", context=ctx, generator=g,
                   net_config=dict(d_model=16, layers=1, heads=2, ff=32, head="pointer", context_encoder="mlp"),
                   train_config=N.TrainConfig(epochs=1, batch_size=32))
    back = M.PermutationModel.from_tensors(*fitted.to_tensors())
    assert back.net.config == fitted.net.config and back.context_shape == (4, 5)
    assert torch.equal(back.log_prob(x, context=ctx), fitted.log_prob(x, context=ctx))
    with pytest.raises(ValueError, match="shape"):
        back.log_prob(x, context=ctx[:, :3])
    with pytest.raises(ValueError, match="context"):
        back.log_prob(x)
