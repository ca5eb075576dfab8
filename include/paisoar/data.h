// paisoar's data pipeline: data sets (IDX, image folders, record shards),
// JPEG/PNG decoding, torchvision-style transforms, the prefetching
// DataLoader with distributed sampling, and device-side preprocessing.
#pragma once

#include "paisoar/data/convert.h"
#include "paisoar/data/data_error.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/data/dataset.h"
#include "paisoar/data/device_preprocess.h"
#include "paisoar/data/distributed_sampler.h"
#include "paisoar/data/folder_scan.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/idx_dataset.h"
#include "paisoar/data/image.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/image_pipeline.h"
#include "paisoar/data/record_shards.h"
#include "paisoar/data/sample_rng.h"
#include "paisoar/data/shard_dataset.h"
#include "paisoar/data/text_corpus.h"
#include "paisoar/data/transforms.h"
