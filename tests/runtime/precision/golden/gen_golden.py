# Regenerates loss_scaler.json from DeepSpeed's own DynamicLossScaler (deepspeed/runtime/fp16/loss_scaler.py),
# with deepspeed.comm and deepspeed.utils stubbed out. Nothing of DeepSpeed is copied: its source is read
# from $DEEPSPEED_SRC at run time. Needs torch (the module imports it); Debian's /usr/bin/python3 has it.
#   DEEPSPEED_SRC=path/to/DeepSpeed /usr/bin/python3 gen_golden.py tests/runtime/precision/golden
import json, os, random, sys, types
REF = os.environ['DEEPSPEED_SRC'] + '/deepspeed/runtime/fp16/loss_scaler.py'
OUT = sys.argv[1] if len(sys.argv) > 1 else '.'
ds = types.ModuleType('deepspeed'); comm = types.ModuleType('deepspeed.comm'); utils = types.ModuleType('deepspeed.utils')
comm.get_rank = lambda: 0
class Logger:
    def info(self, *a): pass
utils.logger = Logger(); ds.comm = comm; ds.utils = utils
sys.modules.update({'deepspeed': ds, 'deepspeed.comm': comm, 'deepspeed.utils': utils})
mod = types.ModuleType('loss_scaler'); exec(compile(open(REF).read(), 'loss_scaler.py', 'exec'), mod.__dict__)

def run(name, overflows, **kw):
    s = mod.DynamicLossScaler(**kw)
    rows, raised_at = [], -1
    for i, o in enumerate(overflows):
        try:
            s.update_scale(bool(o))
        except Exception:
            raised_at = i
            break
        rows.append([float(s.cur_scale), s.cur_hysteresis, s.cur_iter, s.last_overflow_iter])
    spec = dict(init_scale=float(kw.get('init_scale', 2**32)),
                scale_factor=float(kw.get('scale_factor', 2.0)), scale_window=kw.get('scale_window', 1000),
                min_scale=float(kw.get('min_scale', 1)), delayed_shift=kw.get('delayed_shift', 1),
                consecutive_hysteresis=kw.get('consecutive_hysteresis', False),
                raise_error_at_min_scale=kw.get('raise_error_at_min_scale', True))
    return dict(name=name, spec=spec, overflows=''.join('1' if o else '0' for o in overflows), raised_at=raised_at,
                rows=rows)

def pattern(seed, n, p):
    r = random.Random(seed)
    return [r.random() < p for _ in range(n)]

def bursts(n, every, length):
    return [(i % every) < length for i in range(n)]

cases = [
    run('defaults_overflow_until_min_raises', [True] * 40),
    run('defaults_quiet_then_overflow', [False] * 2500 + [True] + [False] * 1200),
    run('config_defaults_random', pattern(1, 300, 0.15), init_scale=2**16, scale_window=5, delayed_shift=2),
    run('consecutive_hysteresis_random', pattern(2, 300, 0.25), init_scale=2**16, scale_window=4, delayed_shift=2,
        consecutive_hysteresis=True),
    run('hysteresis3_bursts', bursts(200, 9, 4), init_scale=2**8, scale_window=3, delayed_shift=3, min_scale=8),
    run('hysteresis3_consecutive_bursts', bursts(200, 7, 3), init_scale=2**8, scale_window=2, delayed_shift=3,
        consecutive_hysteresis=True, min_scale=4),
    run('window1_factor4', pattern(3, 120, 0.4), init_scale=2**20, scale_window=1, scale_factor=4.0, min_scale=0.25),
    run('min_scale_no_raise', [True] * 30 + pattern(4, 60, 0.5), init_scale=2**10, scale_window=2, min_scale=2,
        raise_error_at_min_scale=False),
    run('min_scale_raise_after_hysteresis', [True] * 30, init_scale=2**6, scale_window=10, delayed_shift=2, min_scale=1),
]
with open(os.path.join(OUT, 'loss_scaler.json'), 'w') as f:
    f.write('[\n' + ',\n'.join(json.dumps(c, separators=(',', ':')) for c in cases) + '\n]\n')
print('wrote', len(cases), 'cases')
