"""The digits data set and its held-out split, shared by the trainer and the accuracy test.

Both sides import this module so the test evaluates exactly the images the trainer held out.
The split uses numpy's legacy RandomState, whose stream is frozen across numpy versions, so the
split does not depend on the scikit-learn release.
"""

import hashlib

import numpy as np
from sklearn.datasets import load_digits

SPLIT_SEED = 20240521
HELD_OUT_FRACTION = 0.25


def load_split(seed=SPLIT_SEED, held_out_fraction=HELD_OUT_FRACTION):
    """Returns (train_x, train_y, test_x, test_y, test_indices).

    Images are float32 [N, 1, 8, 8] with sklearn's raw pixel values 0..16; labels are int64.
    """
    digits = load_digits()
    images = digits.images.astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(labels))
    n_test = int(round(len(labels) * held_out_fraction))
    test_idx = np.sort(order[:n_test])
    train_idx = np.sort(order[n_test:])
    return images[train_idx], labels[train_idx], images[test_idx], labels[test_idx], test_idx


def indices_digest(indices):
    """A short fingerprint of the held-out indices, stored so a changed split is detected."""
    return hashlib.sha256(np.asarray(indices, dtype=np.int64).tobytes()).hexdigest()[:16]
