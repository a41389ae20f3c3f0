# Regenerates the golden tables of tests/runtime/config from DeepSpeed's own Python (lr_schedules.py and the
# batch methods of config.py), with torch and deepspeed imports stubbed out. Nothing of DeepSpeed is copied:
# its source is read from $DEEPSPEED_SRC at run time.
#   DEEPSPEED_SRC=path/to/DeepSpeed python3 gen_golden.py tests/runtime/config/golden
import ast, sys, types, math, json
import os
REF = os.environ['DEEPSPEED_SRC'] + '/deepspeed/runtime/'
OUT = sys.argv[1] if len(sys.argv) > 1 else '.'
# --- stub modules so lr_schedules.py imports without torch or deepspeed
torch = types.ModuleType('torch'); optim = types.ModuleType('torch.optim')
class Optimizer: pass
optim.Optimizer = Optimizer; torch.optim = optim
sys.modules['torch'] = torch; sys.modules['torch.optim'] = optim
ds = types.ModuleType('deepspeed'); dsu = types.ModuleType('deepspeed.utils')
class L:
    def warning(self, *a): pass
    def info(self, *a): pass
dsu.logger = L(); ds.utils = dsu
sys.modules['deepspeed'] = ds; sys.modules['deepspeed.utils'] = dsu
src = open(REF + 'lr_schedules.py').read()
mod = types.ModuleType('lrs'); exec(compile(src, 'lr_schedules.py', 'exec'), mod.__dict__)

class Opt(Optimizer):
    def __init__(self, lr=0.01, betas=True):
        self.param_groups = [{'lr': lr}]
        self.defaults = {'lr': lr}
        if betas:
            self.param_groups[0]['betas'] = (0.9, 0.999); self.defaults['betas'] = (0.9, 0.999)

def run(name, cls, kwargs, steps, lr=0.01, betas=True):
    o = Opt(lr, betas); s = cls(o, **kwargs)
    rows = [(-1, o.param_groups[0]['lr'], o.param_groups[0].get('betas', (0, 0))[0], o.param_groups[0].get('betas', (0, 0))[1])]
    for k in range(steps):
        s.step()
        g = o.param_groups[0]
        rows.append((k, g['lr'], g.get('betas', (0, 0))[0], g.get('betas', (0, 0))[1]))
    return name, cls.__name__, lr, betas, kwargs, rows

cases = [
  run('warmup_log', mod.WarmupLR, dict(warmup_min_lr=0.0, warmup_max_lr=0.001, warmup_num_steps=10, warmup_type='log'), 14),
  run('warmup_linear', mod.WarmupLR, dict(warmup_min_lr=1e-5, warmup_max_lr=3e-4, warmup_num_steps=7, warmup_type='linear'), 10),
  run('warmup_one_step', mod.WarmupLR, dict(warmup_min_lr=0.1, warmup_max_lr=0.2, warmup_num_steps=1, warmup_type='log'), 4),
  run('decay_log', mod.WarmupDecayLR, dict(total_num_steps=20, warmup_min_lr=0.0, warmup_max_lr=0.01, warmup_num_steps=5), 24),
  run('decay_linear', mod.WarmupDecayLR, dict(total_num_steps=12, warmup_min_lr=1e-4, warmup_max_lr=1e-3, warmup_num_steps=4, warmup_type='linear'), 15),
  run('decay_short_total', mod.WarmupDecayLR, dict(total_num_steps=3, warmup_min_lr=0.0, warmup_max_lr=0.01, warmup_num_steps=5, warmup_type='linear'), 8),
  run('cosine_log', mod.WarmupCosineLR, dict(total_num_steps=20, warmup_min_ratio=0.1, warmup_num_steps=5, cos_min_ratio=0.01), 24, lr=0.003),
  run('cosine_linear', mod.WarmupCosineLR, dict(total_num_steps=10, warmup_min_ratio=0.0, warmup_num_steps=3, cos_min_ratio=0.0001, warmup_type='linear'), 12, lr=0.05),
  run('onecycle_basic', mod.OneCycle, dict(cycle_min_lr=0.001, cycle_max_lr=0.01, cycle_first_step_size=4, cycle_second_step_size=6, decay_step_size=2, decay_lr_rate=0.5, decay_mom_rate=0.1, cycle_min_mom=0.85, cycle_max_mom=0.95), 18),
  run('onecycle_default_second', mod.OneCycle, dict(cycle_min_lr=0.0001, cycle_max_lr=0.1, cycle_first_step_size=3), 10),
  run('onecycle_no_decay_step', mod.OneCycle, dict(cycle_min_lr=0.002, cycle_max_lr=0.02, cycle_first_step_size=5, cycle_second_step_size=2, decay_lr_rate=0.3, decay_step_size=0, decay_mom_rate=0.2), 11),
  run('onecycle_sgd', mod.OneCycle, dict(cycle_min_lr=0.01, cycle_max_lr=0.1, cycle_first_step_size=2, cycle_second_step_size=3, decay_step_size=3, decay_lr_rate=1.0), 9, betas=False),
  run('range_continuous', mod.LRRangeTest, dict(lr_range_test_min_lr=1e-4, lr_range_test_step_size=3, lr_range_test_step_rate=2.0), 10),
  run('range_staircase', mod.LRRangeTest, dict(lr_range_test_min_lr=0.001, lr_range_test_step_size=4, lr_range_test_step_rate=0.5, lr_range_test_staircase=True), 12),
]
out = []
for name, typ, lr, betas, kw, rows in cases:
    out.append({'name': name, 'type': typ, 'lr': lr, 'optimizer_has_betas': betas, 'params': kw, 'rows': [[r[0], repr(float(r[1])), repr(float(r[2])), repr(float(r[3]))] for r in rows]})
with open(os.path.join(OUT, 'lr_schedules.json'), 'w') as f:
    f.write('[\n' + ',\n'.join(json.dumps(c) for c in out) + '\n]\n')

# --- batch arithmetic straight from config.py's two methods
tree = ast.parse(open(REF + 'config.py').read())
cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == 'DeepSpeedConfig')
methods = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ('_set_batch_related_parameters', '_batch_assertion')]
ns = {}
m = ast.Module(body=[ast.ClassDef(name='B', bases=[], keywords=[], body=methods, decorator_list=[])], type_ignores=[])
ast.fix_missing_locations(m)
exec(compile(m, 'config.py', 'exec'), ns)
B = ns['B']
def batch(t, mi, g, ws):
    b = B(); b.train_batch_size, b.train_micro_batch_size_per_gpu, b.gradient_accumulation_steps, b.world_size = t, mi, g, ws
    try:
        b._set_batch_related_parameters(); b._batch_assertion()
        return ['ok', b.train_batch_size, b.train_micro_batch_size_per_gpu, b.gradient_accumulation_steps]
    except AssertionError as e:
        msg = str(e)
        for prefix, key in (('Train batch size: ', 'train_batch_size'), ('Micro batch size per gpu: ', 'train_micro_batch_size_per_gpu'),
                            ('Gradient accumulation steps: ', 'gradient_accumulation_steps')):
            if msg.startswith(prefix):
                return ['nonpositive', key, int(msg[len(prefix):].split(' ')[0])]
        if msg.startswith('Check batch related'):
            return ['mismatch', msg.split('world_size ')[1]]
        if msg.startswith('Either'):
            return ['missing']
        raise
    except ZeroDivisionError as e:
        return ['zerodiv']
vals = [None, -4, 0, 1, 2, 3, 4, 6, 8, 16]
rows = []
for ws in [1, 2, 3, 4]:
    for t in vals:
        for mi in vals:
            for g in vals:
                rows.append([t, mi, g, ws] + batch(t, mi, g, ws))
with open(os.path.join(OUT, 'batch_arithmetic.json'), 'w') as f:
    f.write('[\n' + ',\n'.join(json.dumps(r) for r in rows) + '\n]\n')
print(len(rows), 'batch rows;', sum(1 for r in rows if r[4] == 'ok'), 'ok')
