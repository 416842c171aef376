#include "train/corpus.h"

#include <sstream>

namespace ss {

namespace {

// The hand-written part, in chunks well under the 16 KB that some compilers
// allow for one string literal (MSVC's limit; GCC and Clang allow more).

const char* const kChapterOne = R"TEXT(How a model learns on many machines

A language model learns by reading text and guessing the next token. It reads a
batch of sequences, compares its guesses with the tokens that really came next,
and measures how wrong it was. That measure is the loss. The backward pass then
asks, for every parameter, which way it should move to make the loss smaller.
The answer is the gradient. The optimizer takes a small step along the
gradient, and the model is a little better than it was. Training is this loop,
repeated many thousands of times.

One machine can run this loop alone. It holds the parameters, the gradients,
the optimizer state and the activations of one batch, and it does all the
arithmetic itself. When the model is small and the data is small, that is the
simplest thing to do, and it is the first thing to understand. Every other way
of training is measured against it: a distributed run is correct when it
computes the same loss and the same gradients as the single machine would have
computed on the same data.

Why use more than one machine? There are two reasons, and they are different.
The first reason is time. A batch takes a certain number of operations, and one
machine can only do so many operations per second. If we give the work to many
machines, each does a part, and the step finishes sooner. The second reason is
memory. A large model does not fit in the memory of one machine at all. Its
parameters, its gradients and its optimizer state together can need hundreds of
gigabytes. Then we must split the model itself, not only the work.

Each way of splitting answers one of these reasons. Data parallelism splits the
batch. Tensor parallelism splits the layers. Pipeline parallelism splits the
stack of layers into stages. Sequence parallelism splits each sequence. The
ZeRO family of methods splits the model states that data parallelism would
otherwise copy onto every machine. A real training run often uses several of
them at once, and the art is in choosing how many machines go to each.

Data parallelism

Data parallelism is the easiest to understand. Every rank holds a full copy of
the model. Every rank reads a different part of the batch. Each rank runs the
forward pass and the backward pass on its own samples, and so each rank ends up
with its own gradient. These gradients are not the same, because the samples
were not the same. Before the optimizer step, the ranks average their
gradients with an operation called all-reduce. After the all-reduce, every rank
holds the same averaged gradient, which is exactly the gradient that one
machine would have computed on the whole batch. Every rank then takes the same
optimizer step, and every copy of the model stays the same as every other.

The all-reduce is the only communication in plain data parallelism. Its cost
depends on the size of the model, not on the size of the batch. A ring
all-reduce moves about two times the gradient size through each rank, no matter
how many ranks there are. That is why data parallelism scales so well: adding
ranks adds compute, and the communication per rank stays nearly the same.

The weakness of data parallelism is memory. Every rank holds the whole model,
the whole gradient and the whole optimizer state. With the Adam optimizer and
mixed precision, that is sixteen bytes for every parameter: two bytes for the
weights, two bytes for the gradients, and twelve bytes for the fp32 master
weights and the two moments of Adam. A model with seven billion parameters
needs more than one hundred gigabytes just for these model states, before a
single activation is stored. Adding more ranks does not help, because every
rank keeps its own full copy.

The global batch size

When many ranks train together, the batch that the optimizer sees is larger
than the batch that any one rank sees. Each rank processes a micro-batch. A
rank may also run several micro-batches before it steps, adding up their
gradients; this is gradient accumulation. The global batch size is the number
of samples that go into one optimizer step: the micro-batch size, times the
number of accumulation steps, times the number of data-parallel ranks. Tensor,
pipeline and sequence parallel ranks do not add to the global batch, because
they work together on the same samples. Only the data-parallel ranks read
different samples.

This matters because the global batch size is part of the recipe. A learning
rate that works for a batch of one thousand samples may not work for a batch of
ten thousand. If we move a run to a larger cluster and keep everything else the
same, the data-parallel degree grows and the global batch grows with it. To
keep the global batch the same, we must lower the accumulation steps, or the
micro-batch size, or give more of the ranks to tensor, pipeline or sequence
parallelism instead.
)TEXT";

const char* const kChapterTwo = R"TEXT(ZeRO: removing the copies

ZeRO stands for the Zero Redundancy Optimizer. It starts from a simple
observation. In data parallelism every rank holds the same optimizer state, the
same gradients and the same parameters. That is redundant. The ranks could each
hold one slice and fetch the rest only when they need it. ZeRO comes in three
stages, and each stage removes one more copy.

In stage one, the optimizer state is split. Each rank keeps the Adam moments
and the master weights for its own slice of the parameters only. After the
backward pass, the ranks reduce their gradients so that each rank has the
averaged gradient for its slice. Each rank updates its slice. Then the ranks
all-gather the updated parameters, so that every rank again holds the full model
for the next forward pass. The optimizer state, which was the largest part of
the memory, is now divided by the number of ranks.

In stage two, the gradients are split as well. A rank does not need the full
averaged gradient, only the part for its slice. So instead of an all-reduce, the
ranks use a reduce-scatter: each rank receives the sum of one slice, and the
other slices are never stored in full. The communication volume is the same as
in plain data parallelism, because an all-reduce is a reduce-scatter followed
by an all-gather, and ZeRO simply does the two halves at different times.

In stage three, the parameters are split too. No rank holds the whole model at
any moment. Before a layer runs its forward pass, the ranks all-gather that
layer's parameters, use them, and throw the gathered copy away. The backward
pass gathers them again. This costs one more all-gather per step, about half as
much again as the communication of data parallelism, but it divides every model
state by the number of ranks. With enough ranks, a model of any size fits.

Replica groups

When the ranks are many, sharding over all of them makes every collective span
the whole cluster, and the slow links between nodes become the bottleneck. A
replica group is the answer. The ranks are arranged in a grid: within a group,
the model states are sharded; across groups, they are replicated. Each
collective of ZeRO then runs inside one group, over fast links, and only the
final gradient average crosses between groups. This is what hybrid sharding
means. It spends some memory, because each group holds a full set of the model
states, to save a great deal of slow communication.

Tensor parallelism

Tensor parallelism splits the matrices inside each layer. Take the multilayer
perceptron of a transformer block: a matrix that widens the hidden state four
times, a nonlinearity, and a matrix that narrows it back. Split the first matrix
by columns, so that each rank computes some of the wide features. The
nonlinearity works on each feature alone, so each rank can apply it to its own
features without talking to anyone. Split the second matrix by rows, so that
each rank multiplies its own features by its own rows. Each rank now holds a
partial sum of the output. One all-reduce adds the partial sums, and the block
is done. The same trick splits attention by heads: each rank owns some heads,
computes their attention alone, and the output projection ends in one
all-reduce.

The price is communication inside every layer, in the forward pass and again in
the backward pass. The all-reduce moves activations, and activations grow with
the batch and the sequence length. That is why tensor parallel ranks are placed
on the same node, joined by the fastest links. The gain is that each rank holds
only a fraction of every weight matrix, and does only a fraction of the matrix
arithmetic.

Sequence parallelism

Some parts of a transformer block are not split by tensor parallelism. The
layer norms and the dropouts run on the whole hidden state, and every tensor
parallel rank computes them again on the same data, storing the same
activations. Sequence parallelism in the Megatron style splits these parts
along the sequence instead: each rank handles some of the positions. The
all-reduce at the end of a tensor parallel region becomes a reduce-scatter,
which leaves each rank with the sum for its own positions. Before the next
tensor parallel region, an all-gather brings the positions back together. The
communication volume stays the same, because a reduce-scatter and an all-gather
cost what one all-reduce costs, but the stored activations shrink.

For very long sequences, attention itself must be split. In the Ulysses
method, each rank starts with a piece of the sequence for all heads. An
all-to-all exchange gives each rank all of the sequence for some of the heads,
attention runs, and a second all-to-all puts the pieces back. In ring
attention, each rank keeps its own queries and passes its keys and values
around a ring of ranks, one piece at a time, so that every query meets every
key without any rank holding the whole sequence.
)TEXT";

const char* const kChapterThree = R"TEXT(Pipeline parallelism

Pipeline parallelism splits the model by depth. The first rank holds the first
few layers, the next rank holds the next few, and so on. Activations flow from
stage to stage in the forward pass, and gradients flow back in the backward
pass. Each stage sends only the activations at its boundary, which are small
compared with the all-reduces of tensor parallelism, so pipeline stages can sit
on different nodes.

The difficulty is idle time. If the whole batch goes through the pipeline at
once, the last stage waits while the first stage works, and the first stage
waits while the last stage works. The answer is to cut the batch into
micro-batches. While the second stage works on the first micro-batch, the first
stage can start on the second. The pipeline fills, runs full for a while, and
drains. The idle time at the start and the end is called the bubble. With p
stages and m micro-batches, the bubble is p minus one slots out of m plus p
minus one, so more micro-batches make the bubble smaller.

The order in which the micro-batches run is the schedule. In the GPipe
schedule, all forward passes run first and all backward passes after them. It
is simple, but every stage must keep the activations of every micro-batch
until its backward pass. In the one-forward-one-backward schedule, each stage
runs a few forward passes to fill the pipeline, then alternates one forward and
one backward, then finishes the remaining backward passes. The bubble is the
same size, but a stage never holds more activations than the number of stages
in flight. The interleaved schedule goes further: each rank holds several
small stages instead of one large one, which makes the bubble smaller again at
the cost of more messages.

Putting it all together

A large run uses every kind of parallelism at once. The ranks are arranged in a
grid with one axis for each kind. Tensor parallelism is the innermost axis,
because it talks the most and needs the fastest links. Sequence parallelism
comes next. Data parallelism, with its replica groups, spans the nodes.
Pipeline parallelism is the outermost axis, because it talks the least. The
number of ranks in the whole run is the product of the sizes of the axes.

Choosing the sizes is a question of balance. More tensor parallelism saves
memory but adds communication inside every layer. More pipeline stages save
memory but add bubbles. More data parallelism adds throughput but grows the
global batch. ZeRO saves memory at the cost of gathering parameters. The best
layout is the one that fits in memory, keeps the global batch where the recipe
wants it, and wastes the least time waiting for messages.

A planner can answer these questions before any machine is used. For each
layout it counts the bytes of the model states, the bytes of the activations,
the bytes of every collective and the time each one takes on the links between
the ranks. It then lists the layouts that fit, sorted by the time of one step.
The formulas come from the papers that introduced each method, and a small run
on real ranks can check that the bytes the planner predicts are the bytes that
were really sent.

What the trace shows

When the engine runs, it writes down every collective it issues: which
operation, which ranks took part, how many bytes each rank sent, and whether
those bytes were parameters, gradients or activations. It also writes down how
much memory each rank holds, in each category, over time. Opening the trace,
one can watch ZeRO gather a layer just before it is needed and release it just
after, see the tensor parallel all-reduces inside every block, and count the
bubbles in a pipeline schedule. Reading the numbers side by side with the
planner's prediction is the best way to learn why a layout is fast or slow.

A few rules of thumb

Communication inside a node is fast, and communication between nodes is slow.
Put the chattiest parallelism inside the node. Memory is usually the first
limit, and time is the second. Start with data parallelism, add ZeRO when the
model states do not fit, add tensor parallelism when a single layer is too
large or the activations are too many, and add pipeline stages when the model
is too deep for one node. Keep the global batch in mind at every step, because
every data-parallel rank you add makes it larger.

The loss is the judge. A distributed run that is fast but computes a different
loss is wrong. Every strategy in this engine is tested by running it beside
the single-rank model on the same data, and comparing the loss and every
gradient. When they agree, the strategy is correct, and what remains is to make
it fast.
)TEXT";

// Generated sentences: the GBS arithmetic for many layouts. They repeat one
// pattern with different numbers, which a small model learns quickly.
std::string generated_arithmetic() {
    std::ostringstream os;
    os << "\nWorked examples of the global batch size\n\n";
    const int worlds[] = {8, 16, 32, 64, 128, 256, 512};
    const int tps[] = {1, 2, 4, 8};
    const int pps[] = {1, 2, 4};
    const int mbss[] = {1, 2, 4, 8, 16};
    int k = 0;
    for (int world : worlds) {
        for (int tp : tps) {
            for (int pp : pps) {
                if (world % (tp * pp) != 0) continue;
                int dp = world / (tp * pp);
                int mbs = mbss[k % 5];
                int ga = 1 << (k % 4);
                ++k;
                os << "With " << world << " ranks, tensor parallel size " << tp << " and pipeline size "
                   << pp << ", the data parallel size is " << world << " / (" << tp << " x " << pp
                   << ") = " << dp << ". With a micro-batch of " << mbs << " and " << ga
                   << (ga == 1 ? " accumulation step" : " accumulation steps") << ", the global batch is "
                   << mbs << " x " << ga << " x " << dp
                   << " = " << mbs * ga * dp << " samples.\n";
            }
        }
    }
    os << "\nMemory of the model states with Adam in mixed precision\n\n";
    const int billions[] = {1, 3, 7, 13, 30, 70};
    const int shards[] = {1, 8, 64};
    for (int b : billions) {
        for (int n : shards) {
            // ZeRO paper, section 3.1: 2 + 2 + 12 bytes per parameter.
            os << "A model of " << b << " billion parameters needs " << 16 * b
               << " GB for its model states on one rank. With ZeRO stage three over " << n
               << (n == 1 ? " rank" : " ranks") << ", each rank holds " << (16.0 * b) / n
               << " GB. With stage one, each rank holds " << 4 * b << " + " << 12.0 * b / n << " GB.\n";
        }
    }
    return os.str();
}

}  // namespace

const std::string& builtin_corpus_text() {
    static const std::string text = std::string(kChapterOne) + "\n" + kChapterTwo + "\n" + kChapterThree +
                                    generated_arithmetic();
    return text;
}

std::vector<uint16_t> builtin_corpus_tokens() {
    const std::string& s = builtin_corpus_text();
    std::vector<uint16_t> tokens(s.size());
    for (size_t i = 0; i < s.size(); ++i) tokens[i] = uint16_t(static_cast<unsigned char>(s[i]));
    return tokens;
}

}  // namespace ss
