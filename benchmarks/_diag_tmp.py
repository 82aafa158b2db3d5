import numpy as np, cupy as cp
from qrlab import updates, stages
from qrlab.executor import Executor
from qrlab.gpu import GpuExecutor
for (nrows,n,p,nc) in [(64,64,5,1),(64,64,5,33),(96,64,5,40),(64,64,40,1)]:
    rng=np.random.default_rng(nrows+n+p+nc)
    R=np.triu(rng.standard_normal((nrows,n+nc))).astype(np.float32)
    U=rng.standard_normal((p,n+nc)).astype(np.float32)
    ex=GpuExecutor()
    Rg=updates._insert_rows(None,cp.asarray(R),cp.asarray(U),0,"none",ex)[1].get()
    Rn=updates._insert_rows(None,R,U,0,"none",Executor())[1]
    d=np.abs(Rg-Rn)>1e-3
    print(nrows,n,p,nc, "bad entries:", d.sum(), "rows", np.unique(np.nonzero(d)[0])[:10], "cols", np.unique(np.nonzero(d)[1])[:10])
    W=np.vstack([R,U]).astype(np.float64)
    print("  gram err", np.abs(Rg.astype(np.float64).T@Rg - W.T@W).max(), "triu", np.array_equal(np.triu(Rg),Rg))
