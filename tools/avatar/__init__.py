"""BigMaQ avatar fitting: a skinned template fitted to one subject, then per-frame joint rotations.

Modules: ``rotation`` (safe Rodrigues), ``model`` (template, linear blend skinning with bone
scales and symmetric offsets), ``camera`` (OpenCV projection in torch), ``triangulate`` (robust
DLT), ``raster`` (soft silhouettes), ``fit`` (objective and stages), ``synth`` (synthetic
protocol), ``metrics`` (evaluation).
"""
