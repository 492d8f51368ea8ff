// A product's output split into column blocks (GemmLaunchSpec::ColumnSplit in src/ops/gemm_launch.h: the
// sibling products of one A merged into one): columns [0, split_end_0) are `output`, [split_end_0,
// split_end_1) `output_1` and, with SPLIT_THIRD, [split_end_1, N) `output_2`, each stored [rows][its width].
// `row` counts the product's rows over its batch ([batch][M] flattened).
fn store_split_column(row: u32, n: u32, v: f32) {
  let end_0 = params.split_end_0;
  let end_1 = params.split_end_1;
  if (n < end_0) {
    output[row * end_0 + n] = v;
  } else if (n < end_1) {
    output_1[row * (end_1 - end_0) + n - end_0] = v;
  }
#if SPLIT_THIRD
  else {
    output_2[row * (params.N - end_1) + n - end_1] = v;
  }
#endif
}
