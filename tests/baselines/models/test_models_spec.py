"""Model specs and options: parsed and checked before PyTorch or TVM is imported."""

import subprocess
import sys

import pytest
from conftest import ROOT

from pool_fusion_tuning.baselines.models.model_errors import ModelError
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions, ModelSpec, parse_spec


@pytest.mark.parametrize(
    "text, spec",
    [
        ("torchvision:inception_v3", ModelSpec("torchvision", "inception_v3")),
        ("timm:nasnetalarge", ModelSpec("timm", "nasnetalarge")),
        ("my_models.py:build", ModelSpec("file", "build", "my_models.py")),
        ("dir/with:colon/m.py:build", ModelSpec("file", "build", "dir/with:colon/m.py")),
    ],
)
def test_specs_parse_and_print_back(text, spec):
    assert parse_spec(text) == spec
    assert parse_spec(text).text == text


@pytest.mark.parametrize(
    "text, says",
    [
        ("resnet50", "not one of torchvision:NAME, timm:NAME or FILE.py:FUNCTION"),
        ("torchvision:", "names no model"),
        ("models.txt:build", "not one of"),
        ("models.py:", "is not a Python function name"),
        ("models.py:1build", "is not a Python function name"),
    ],
)
def test_malformed_specs_say_what_is_accepted(text, says):
    with pytest.raises(ModelError, match=says):
        parse_spec(text)


@pytest.mark.parametrize(
    "options, says",
    [
        ({"batch": 0}, "batch must be a positive integer"),
        ({"size": -3}, "size must be a positive integer"),
        ({"dtype": "bfloat16"}, "dtype must be one of float32, float16"),
    ],
)
def test_bad_options_are_refused(options, says):
    with pytest.raises(ModelError, match=says):
        ModelOptions(**options)


def test_specs_and_options_import_neither_torch_nor_tvm():
    code = (
        "import sys; import baselines.models.model_spec, baselines.models.catalog; "
        "print(sorted(m for m in ('torch', 'tvm') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_builtin_list_covers_the_issues_models_with_valid_specs():
    from pool_fusion_tuning.baselines.models.catalog import BUILTIN_MODELS

    labels = [entry.label for entry in BUILTIN_MODELS]
    assert len(set(labels)) == len(labels) >= 6
    for entry in BUILTIN_MODELS:
        assert parse_spec(entry.spec).source in ("torchvision", "timm")
    decomposed = {entry.spec for entry in BUILTIN_MODELS if entry.options.decompose}
    assert {"torchvision:mobilenet_v2", "torchvision:efficientnet_b0"} <= decomposed
    assert {"torchvision:inception_v3", "torchvision:resnet50"} <= {e.spec for e in BUILTIN_MODELS}
