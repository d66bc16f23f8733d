"""Each way a model spec fails is a one-line ModelError: unknown names, missing libraries
(stand-ins here), export or import refusals, FILE.py:FUNCTION specs good and bad."""

import importlib
import shutil
import textwrap
from types import SimpleNamespace

import pytest
from conftest import USER_MODELS

from pool_fusion_tuning.baselines.models import load
from pool_fusion_tuning.baselines.models.importer import import_model, prepare_model
from pool_fusion_tuning.baselines.models.model_errors import (
    MissingPackage,
    ModelError,
    NotExportable,
    UnknownModel,
    UnsupportedOperator,
)
from pool_fusion_tuning.baselines.models.model_spec import FILE, ModelOptions, ModelSpec, parse_spec

pytestmark = pytest.mark.torch


def _tiny():
    import torch

    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())


class _Weights:
    """torchvision's weights enum as `_torchvision_size` reads it."""

    transforms = SimpleNamespace(keywords={"crop_size": 32})


def _fake_hubs(monkeypatch):
    """torchvision and timm stand-ins: the calls `load.py` makes, on a tiny model."""
    made = {}

    def get_model(name, weights):
        made["torchvision"] = (name, weights)
        return _tiny()

    def create_model(name, pretrained):
        made["timm"] = (name, pretrained)
        module = _tiny()
        module.pretrained_cfg = {"input_size": (3, 20, 20)}
        return module

    hubs = {
        "torchvision": SimpleNamespace(
            models=SimpleNamespace(
                list_models=lambda: ["resnet50", "resnet18", "inception_v3"],
                get_model=get_model,
                get_model_weights=lambda name: SimpleNamespace(DEFAULT=_Weights),
            )
        ),
        "timm": SimpleNamespace(
            list_models=lambda: ["nasnetalarge", "pnasnet5large"], create_model=create_model
        ),
    }
    real = load.require
    monkeypatch.setattr(load, "require", lambda name, by: hubs.get(name) or real(name, by))
    return made


def test_hub_models_get_random_weights_and_their_own_input_size(monkeypatch):
    made = _fake_hubs(monkeypatch)
    loaded = load.load_model(parse_spec("torchvision:resnet18"), ModelOptions(batch=2))
    assert made["torchvision"] == ("resnet18", None)
    assert loaded.inputs[0].shape == (2, 3, 32, 32)
    loaded = load.load_model(parse_spec("timm:nasnetalarge"), ModelOptions(size=24))
    assert made["timm"] == ("nasnetalarge", False)
    assert loaded.inputs[0].shape == (1, 3, 24, 24)
    assert not loaded.module.training


@pytest.mark.parametrize(
    "transforms, size",
    [
        (SimpleNamespace(keywords={"crop_size": 299}), 299),  # inception_v3's
        (SimpleNamespace(keywords={"crop_size": (112, 112)}), 112),  # video models'
        (type("ObjectDetection", (), {}), load.DEFAULT_SIZE),  # no crop size
    ],
)
def test_torchvision_input_size_is_the_default_weights_crop(transforms, size):
    weights = SimpleNamespace(DEFAULT=SimpleNamespace(transforms=transforms))
    torchvision = SimpleNamespace(models=SimpleNamespace(get_model_weights=lambda name: weights))
    assert load._torchvision_size(torchvision, parse_spec("torchvision:m")) == size


def test_the_same_spec_gets_the_same_weights_in_every_load(monkeypatch):
    import torch

    _fake_hubs(monkeypatch)
    spec = parse_spec("timm:nasnetalarge")
    first, second = (load.load_model(spec, ModelOptions()) for _ in range(2))
    assert torch.equal(first.module[0].weight, second.module[0].weight)
    assert torch.equal(first.inputs[0], second.inputs[0])


@pytest.mark.parametrize(
    "text, says",
    [
        ("torchvision:resnet5", "torchvision has no model 'resnet5'; close matches: resnet50"),
        ("timm:nasnet_large", "timm has no model 'nasnet_large'; close matches: nasnetalarge"),
        ("timm:zzz", "timm has no model 'zzz'$"),
    ],
)
def test_unknown_names_list_close_matches(monkeypatch, text, says):
    _fake_hubs(monkeypatch)
    with pytest.raises(UnknownModel, match=says):
        load.load_model(parse_spec(text), ModelOptions())


def _without(monkeypatch, package: str, error: Exception) -> None:
    """Importing `package` raises `error`; every other import works."""
    real = importlib.import_module

    def import_module(name):
        if name == package:
            raise error
        return real(name)

    monkeypatch.setattr(importlib, "import_module", import_module)


def test_a_missing_hub_says_what_to_install(monkeypatch):
    _without(monkeypatch, "timm", ImportError("No module named 'timm'"))
    with pytest.raises(MissingPackage, match="^timm:x needs timm: pip install timm$"):
        load.load_model(parse_spec("timm:x"), ModelOptions())


def test_a_hub_that_fails_at_import_is_one_line(monkeypatch):
    # What PyPI's torchvision raises on a CPU wheel of torch.
    error = RuntimeError("operator torchvision::nms does not exist\n(more lines)")
    _without(monkeypatch, "torchvision", error)
    with pytest.raises(MissingPackage) as caught:
        load.load_model(parse_spec("torchvision:resnet50"), ModelOptions())
    assert "\n" not in str(caught.value)
    assert "installed but cannot be imported (operator torchvision::nms does not exist)" in str(
        caught.value
    )


def _loaded(module, *inputs):
    return load.LoadedModel(ModelSpec(FILE, "f", "m.py"), ModelOptions(), module, inputs)


def test_an_unexportable_module_gives_the_exporters_first_line():
    import torch

    class _DataDependent(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(NotExportable) as caught:
        import_model(_loaded(_DataDependent(), torch.randn(2, 3)))
    message = str(caught.value)
    assert message.startswith("torch.export cannot export m.py:f: ")
    assert "data-dependent" in message and "\n" not in message


def test_an_operator_the_importer_lacks_is_named():
    import torch

    class _Cummax(torch.nn.Module):
        def forward(self, x):
            return torch.cummax(x, 1)[0] + 1

    with pytest.raises(UnsupportedOperator, match="no conversion for cummax.default$"):
        import_model(_loaded(_Cummax(), torch.randn(2, 3)))


def _user_file(tmp_path, body: str):
    path = tmp_path / "user_models.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_a_file_spec_imports_the_users_module_and_inputs(tmp_path):
    path = str(shutil.copy(USER_MODELS, tmp_path / "user_models.py"))  # outside the project
    model = prepare_model(f"{path}:two_inputs", ModelOptions())
    assert model.input_signature() == [((2, 4), "float32"), ((2, 5), "float32")]
    assert len(model.mod["main"].params) == 2  # the weights are constants, not parameters
    assert model.to_dict()["spec"] == f"{path}:two_inputs"


@pytest.mark.parametrize(
    "body, function, options, says",
    [
        ("", "build", ModelOptions(), "has no function build"),
        ("build = 3", "build", ModelOptions(), "has no function build"),
        ("def build(): return 3", "build", ModelOptions(), "must return \\(torch.nn.Module"),
        (
            "import torch\ndef build(): return torch.nn.ReLU(), [1]",
            "build",
            ModelOptions(),
            "a tensor or a sequence of tensors",
        ),
        (
            "import torch\ndef build(): return torch.nn.ReLU(), torch.ones(1)",
            "build",
            ModelOptions(batch=4),
            "makes its own example inputs; drop the batch option",
        ),
    ],
)
def test_malformed_file_specs_are_one_line_errors(tmp_path, body, function, options, says):
    path = _user_file(tmp_path, body)
    with pytest.raises(ModelError, match=says):
        prepare_model(f"{path}:{function}", options)


def test_a_file_spec_naming_no_file_says_so(tmp_path):
    with pytest.raises(ModelError, match="no file"):
        prepare_model(f"{tmp_path}/absent.py:build", ModelOptions())


def test_a_vision_transformer_gets_the_size_it_was_built_for_not_its_weights_crop():
    weights = SimpleNamespace(
        DEFAULT=SimpleNamespace(
            transforms=SimpleNamespace(
                keywords={"crop_size": 518}  # vit_h_14's default weights
            )
        )
    )
    torchvision = SimpleNamespace(models=SimpleNamespace(get_model_weights=lambda name: weights))
    built = SimpleNamespace(image_size=224)  # torchvision's VisionTransformer, no weights
    spec = parse_spec("torchvision:vit_h_14")
    assert load._torchvision_size(torchvision, spec, built) == 224
    assert load._torchvision_size(torchvision, spec, _tiny()) == 518
