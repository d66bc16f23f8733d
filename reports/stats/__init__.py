"""The statistics the reports use: medians and spreads (medians.py), paired ratios with their
intervals (paired.py), the intervals' coverage simulated (coverage.py), noise by level
(noise.py). They read stored samples only; measuring needs none of them."""
