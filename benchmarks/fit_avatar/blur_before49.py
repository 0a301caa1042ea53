"""FitConfig's blur fields as they were before stop 49 (2026-12-07), when FitConfig's defaults became the shape
command's ``--sigma mesh-auto`` (sigma_bias 0.03, sigma_bias_bones false; RESULTS section 16). The scripts of
this folder start every FitConfig from these, so their ``masks`` variants and every RESULTS command written
before that day still mean sigma 0.1 in both stages; ``--set`` and the named variants override them."""

SIGMA_BEFORE_49 = {"sigma_bias": 0.0, "sigma_bias_bones": True}
