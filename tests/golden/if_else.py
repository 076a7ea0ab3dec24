# srcgrad: forward and backward sweeps of if_else (_inputs.py:15), with respect to x
# names srcgrad binds:
#   _rt = srcgrad.runtime

def if_else_fwd(x):
    # forward sweep
    _tape = _rt.Tape()
    _c1 = x > 0
    if _c1:
        y = x * x
    else:
        y = -3 * x
    _tape.push(_c1)
    _t1 = y + 1
    return _t1, (_tape, x)


def if_else_bwd(_saved, b_t1):
    # backward sweep
    _tape, x = _saved
    # _inputs.py:20  return y + 1
    by = b_t1
    _c1 = _tape.pop()
    if _c1:
        # _inputs.py:17  y = x * x
        bx = by * x * 2
    else:
        # _inputs.py:19  y = -3 * x
        bx = by * -3
    del by
    return (_rt.densify(bx, x),)
