import sys, numpy as np, torch
sys.argv=[sys.argv[0]]
sys.path.insert(0, "benchmarks/train_pcn")
from stop40_probe import subset, DATA
from cortexkit.formats.images import read_images
from cortexkit.tools.pcn.api import preprocess_for
from cortexkit.tools.pcn.inference import bp_gradients
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import normalize_weights
torch.set_num_threads(1)
for name, file, norm, lim in [("patches", "/tmp/pcnb/heldout/patches", "dataset", None), ("mnist", str(DATA/"mnist_png_train10k_test10k.safetensors"), "mnist", 5000)]:
    tr = read_images(file, "train"); im, lb = subset(tr.images, tr.labels.astype(np.int64), lim)
    prep = preprocess_for(im, norm)
    for wn in (False, True):
        torch.manual_seed(0); net = build_network(NetworkSpec("mlp", tuple(im.shape[1:]), int(lb.max())+1, width=128, depth=16))
        if wn: normalize_weights(net, "fan")
        idx = np.random.default_rng(0).permutation(len(lb))[:128]
        x = prep(torch.from_numpy(im[idx])); y = torch.from_numpy(lb[idx])
        res = bp_gradients(net, x, y, "ce", scale=1/128)
        params = list(net.parameters()); layers = weight_layers(net)
        g = {id(p): gr for p, gr in zip(params, res.grads)}
        rms = [float(g[id(l.weight)].pow(2).mean().sqrt()) for l in layers]
        # Adam's first step: g/(|g|+eps) per entry -> mean |update|/lr
        first = [float((g[id(l.weight)].abs()/(g[id(l.weight)].abs()+1e-8)).mean()) for l in layers]
        xin = x.flatten(1)
        print(name, "WN" if wn else "BP", "grad RMS L1,L4,L8,L12,L16:", ["%.1e" % rms[i] for i in (0,3,7,11,15)],
              "Adam step/lr L1,L4,L8:", ["%.3f" % first[i] for i in (0,3,7)],
              "input: mean |x| %.2f, |mean_batch x|/rms %.2f" % (float(xin.abs().mean()), float(xin.mean(0).pow(2).mean().sqrt()/xin.pow(2).mean().sqrt())))
