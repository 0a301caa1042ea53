"""Copulas from diffusions and flows (Huk & Damoulas, ICLR 2026): marginals kept, dependencies learned.

Modules:

* :mod:`marginals`   ECDF pseudo-observations fitted on the training split, interpolated ECDF for new
  points, optional boundary-corrected KDE marginals, the Gaussian scale z = Phi^-1(u).
* :mod:`closed_form` Gaussian, Student-t, Clayton, Gumbel, Frank copulas and mixtures: exact
  log-densities and samplers (ground truth for tests and ``simulate``).
* :mod:`cdc`         the classification-diffusion copula (density in one forward pass, DDPM sampling).
* :mod:`reflection`  the reflection copula (billiard in the cube; fast sampling, no density).
* :mod:`metrics`     log Z by importance sampling with ESS, W2 on the Gaussian scale, Kendall-tau
  Frobenius error, KS against U(0,1).
* :mod:`model`       one fitted model (marginals + copula: CDC, reflection, or the closed-form
  independence and Gaussian baselines fitted on the training data), its checks of bad input,
  evaluation, and artifact tensors.
"""
