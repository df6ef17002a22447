"""Unbiased split gains for LightGBM and XGBoost (Zhang et al., IJCAI 2023)."""
