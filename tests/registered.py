"""The registered models as the tests see them: every test that runs over "each model" takes
its list from :func:`models` and each model's small settings from :func:`tiny`, so a model
added to the registry (``re2_tf.models.spec.register``) is in those tests with no other edit."""

from re2_tf.models import get_spec, model_names


def models():
    """Names of the registered models, in registry order."""
    return list(model_names())


def tiny(name, **options):
    """``name``'s tiny hyper-parameters (its spec's ``tiny``), with ``options`` on top."""
    return {**get_spec(name).tiny, **options}
