"""The methods, one package per tool; plain torch/numpy code, no click, no file paths."""
