# Types of paisoar._build_info, the module setup.py writes at install time.
TORCH_VERSION: str
