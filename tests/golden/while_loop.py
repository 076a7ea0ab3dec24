# srcgrad: forward and backward sweeps of while_loop (_inputs.py:30), with respect to x
# names srcgrad binds:
#   _rt = srcgrad.runtime

def while_loop_fwd(x):
    # forward sweep
    y = x
    _n1 = 0
    while y < 10.0:
        _n1 = _n1 + 1
        _t1 = y * 1.5
        y = _t1
    return y, (x, _n1)


def while_loop_bwd(_saved, by):
    # backward sweep
    x, _n1 = _saved
    for _k1 in range(_n1):
        # _inputs.py:33  y = y * 1.5
        by = by * 1.5
    # _inputs.py:31  y = x
    bx = by
    return (_rt.densify(bx, x),)
