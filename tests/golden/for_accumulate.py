# srcgrad: forward and backward sweeps of for_accumulate (_inputs.py:23), with respect to x
# names srcgrad binds:
#   _rt = srcgrad.runtime

def for_accumulate_fwd(x, n):
    # forward sweep
    _tape = _rt.Tape()
    _t1 = None
    i = None
    total = 0.0
    _n1 = len(range(n))
    for i in range(n):
        _tape.push(_rt.shape_like(_t1))
        _t1 = x * i
        _t2 = total + _t1
        _tape.push(_rt.shape_like(total))
        total = _t2
        _tape.push(i)
    return total, (_tape, x, _n1, _rt.shape_like(_t1), i, _rt.shape_like(total))


def for_accumulate_bwd(_saved, btotal):
    # backward sweep
    _tape, x, _n1, _t1, i, total = _saved
    bx = 0.0
    for _k1 in range(_n1):
        i = _tape.pop()
        # _inputs.py:26  total = total + x * i
        b_t2 = btotal
        total = _tape.pop()
        btotal = _rt.unbroadcast(btotal, total)
        b_t1 = _rt.unbroadcast(b_t2, _t1)
        bx = bx + _rt.unbroadcast(b_t1 * i, x)
        _t1 = _tape.pop()
    return (_rt.densify(bx, x),)
