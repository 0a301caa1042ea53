"""Meta-PCN (Ha et al., ICLR 2026) and its baselines: PC, iPC, backprop (+ weight normalisation)."""
