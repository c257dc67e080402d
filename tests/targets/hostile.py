# A target whose function, file and thread names are hostile to every
# output: markup (< & "), the collapsed separator (;), a newline, terminal
# escape sequences (colour, window title), Unicode format characters (a
# right-to-left override, zero-width joiner and space, a bidi isolate),
# a lone surrogate (what a file name of invalid UTF-8 becomes under
# surrogateescape) and 10 kB names.  The spinning function has a str
# local of the same kind (EVIL), for dump --locals.
#
# Two threads spin: the main thread in long_name -> hostile, a thread named
# hostile in hostile.  OUTDIR/truth.json gets the names as Python holds
# them (ascii-escaped), then OUTDIR/ready once both spin.
import json
import os
import sys
import threading

outdir = sys.argv[-1]
HOSTILE = ('<b>&amp;"q";semi\nline\x1b[31mred\x1b[0m\x1b]0;title\x07 \u00e9'
           '\u202egnp.exe\u200d\u200b\u2066')
EVIL = '\x1b[31mred\x07\u202e\u200b\x85'
LONG = 'L' * 10240
FILE = '/tmp/<evil>&";\n\x1b[31m\u202e' + os.fsdecode(b'\xff\xfe') + '.py'

SRC = '''
def hostile(started):
    evil = EVIL
    started.set()
    n = 0
    while True:
        n += 1

def long_name(started):
    hostile(started)
'''


def renamed(fn, name):
    code = fn.__code__
    if not hasattr(code, 'replace'):	# 3.7: only the file name is hostile
        return fn
    kw = {'co_name': name}
    if sys.version_info >= (3, 11):
        kw['co_qualname'] = name
    fn.__code__ = code.replace(**kw)
    return fn


ns = {'EVIL': EVIL}
exec(compile(SRC, FILE, 'exec'), ns)
hostile = renamed(ns['hostile'], HOSTILE)
long_name = renamed(ns['long_name'], LONG)
# long_name calls hostile through its globals.
ns['hostile'] = hostile

def say_ready(started):
    started.wait()
    open(os.path.join(outdir, 'ready'), 'w').close()


thread_started, main_started = threading.Event(), threading.Event()
t = threading.Thread(target=hostile, name=HOSTILE, args=(thread_started,), daemon=True)
t.start()
thread_started.wait()
renamed_funcs = hasattr(hostile.__code__, 'replace')
with open(os.path.join(outdir, 'truth.tmp'), 'w') as f:
    json.dump({'function': HOSTILE if renamed_funcs else 'hostile',
               'long': LONG if renamed_funcs else 'long_name',
               'file': FILE, 'thread': HOSTILE, 'evil_repr': repr(EVIL),
               'pid': os.getpid()}, f)
os.rename(os.path.join(outdir, 'truth.tmp'), os.path.join(outdir, 'truth.json'))
threading.Thread(target=say_ready, args=(main_started,), daemon=True).start()
long_name(main_started)
