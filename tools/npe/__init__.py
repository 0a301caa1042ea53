"""MF-(TS)NPE: multifidelity neural posterior estimation (Krouglova et al., ICLR 2026)."""
