// paisoar's Megatron-style tensor parallelism: the region mappings (copy,
// reduce, gather, scatter), column-/row-parallel Linears, the vocab-parallel
// Embedding and cross-entropy, and GPT's attention, MLP, block and whole model
// split across a group, each loadable from the unsplit layer.
#pragma once

#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/mappings.h"
#include "paisoar/tensor_parallel/parallel_attention.h"
#include "paisoar/tensor_parallel/parallel_classifiers.h"
#include "paisoar/tensor_parallel/parallel_gpt.h"
#include "paisoar/tensor_parallel/parallel_gpt_block.h"
#include "paisoar/tensor_parallel/parallel_mlp.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"
#include "paisoar/tensor_parallel/sharding.h"
#include "paisoar/tensor_parallel/vocab_parallel_cross_entropy.h"
#include "paisoar/tensor_parallel/vocab_parallel_embedding.h"
