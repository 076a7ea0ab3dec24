# srcgrad: forward and backward sweeps of straight_line (_inputs.py:9), with respect to x, y
# names srcgrad binds:
#   _rt = srcgrad.runtime

def straight_line_fwd(x, y):
    # forward sweep
    _t1 = x * y
    _t2 = np.sin(x)
    z = _t1 + _t2
    w = z / y
    _t3 = w * w
    return _t3, (x, y, _rt.shape_like(_t1), _rt.shape_like(_t2), w, _rt.shape_like(z))


def straight_line_bwd(_saved, b_t3):
    # backward sweep
    x, y, _t1, _t2, w, z = _saved
    # _inputs.py:12  return w * w
    bw = b_t3 * w * 2
    # _inputs.py:11  w = z / y
    bz = _rt.unbroadcast(bw / y, z)
    by = _rt.unbroadcast(-bw * w / y, y)
    del bw
    # _inputs.py:10  z = x * y + np.sin(x)
    b_t1 = _rt.unbroadcast(bz, _t1)
    b_t2 = _rt.unbroadcast(bz, _t2)
    del bz
    bx = b_t2 * np.cos(x)
    del b_t2
    bx = bx + _rt.unbroadcast(b_t1 * y, x)
    by = by + _rt.unbroadcast(b_t1 * x, y)
    del b_t1
    return _rt.densify(bx, x), _rt.densify(by, y)
