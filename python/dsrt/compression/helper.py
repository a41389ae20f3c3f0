"""deepspeed.compression.helper for dsrt: getting and setting a submodule by its dotted name."""


def recursive_getattr(model, module_name):
    """``model``'s attribute at the dotted path ``module_name`` ("encoder.layer.0.attention")."""
    output = model
    for name in module_name.split('.'):
        output = getattr(output, name)
    return output


def recursive_setattr(model, module_name, module):
    """Sets ``model``'s attribute at the dotted path ``module_name`` to ``module``."""
    split_list = module_name.split('.')
    output = model
    for name in split_list[:-1]:
        output = getattr(output, name)
    output.__setattr__(split_list[-1], module)
