"""Hardware discovery without a framework: the CPU (`cpu.py`), NVIDIA GPUs through NVML
(`nvml.py`), AMD GPUs through amdsmi (`amd.py`). Each optional library is loaded here and
degrades to "no information", never to an error. devices.py, fingerprint.py and the
trackers read the hardware through this package; it imports nothing above it.
"""
