"""RaCO-DP (Yaghini, Cebere et al., ICLR 2026): differentially private training under rate constraints."""
