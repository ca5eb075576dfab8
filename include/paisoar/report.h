// Seeing a run: `paisoar report`'s HTML page and PNG from a run directory's
// metrics. (TensorBoard event files are format::EventWriter, written by the
// Trainer under logging.tensorboard.)
#pragma once

#include "paisoar/report/run_report_page.h"
