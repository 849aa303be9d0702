"""Data layer: public binning, labels and the dataset registry."""

from dpjax.data.binning import (
    DataDependentWarning,
    FeatureSpec,
    ImplausibleBoundsWarning,
    OutOfBoundsWarning,
    as_frame,
    encode,
    make_feature_spec,
)
from dpjax.data.labels import encode_labels, encode_targets, infer_classes, target_units
from dpjax.data.registry import (
    DATASETS,
    EMBEDDED,
    dataset_path,
    list_datasets,
    load_dataset,
    missing_columns,
    public_bounds,
)

__all__ = [
    "DATASETS",
    "EMBEDDED",
    "DataDependentWarning",
    "FeatureSpec",
    "ImplausibleBoundsWarning",
    "OutOfBoundsWarning",
    "as_frame",
    "dataset_path",
    "encode",
    "encode_labels",
    "encode_targets",
    "target_units",
    "infer_classes",
    "list_datasets",
    "load_dataset",
    "make_feature_spec",
    "missing_columns",
    "public_bounds",
]
