"""What runs around the trainer: health monitor, adaptive reward weights, signal stops, the run
record, staged training and the multi-GPU launcher."""
