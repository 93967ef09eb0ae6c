# underspec's section of benchmarks/gpu/run_all.sh (sourced there, which sets PY, DEVICE,
# OUTDIR, STAMP, PAPER_DIR and `section`): one interpolation grid pair, a grid point vs a plain
# evaluation, and the whole 1D grid in fp32 and bf16 evaluation (mBERT shape, XNLI-dev-sized;
# CPU: a smoke run at tiny sizes).
if [ "$DEVICE" = cpu ]; then
  GRID=(--device cpu --hidden 64 --layers 2 --heads 2 --vocab 2000 --examples 40 --repeats 1 --threads 1)
  T_C=120
else
  GRID=(--device cuda --hidden 768 --layers 12 --heads 12 --vocab 119547 --examples 2490 --task xnli --repeats 2)
  T_C=70
fi
section C_grid "$T_C" "$PY" "$PAPER_DIR/benchmarks/grid_point_cost.py" "${GRID[@]}" --full-grid --json "$OUTDIR/grid_$STAMP.json"
