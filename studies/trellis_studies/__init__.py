"""trellis's studies: the campaign that runs them, the report that draws them, the predictor."""
