// exp() computed with IEEE-754 basic operations only.
//
// The sampler turns logits into probabilities; libm's exp() may differ in the
// last bit between C libraries, which could (very rarely) move a sampled id
// across machines. Additions, multiplications, divisions and floor() are
// correctly rounded everywhere, so this version gives the same bits on every
// conforming platform (built without FMA contraction, which the project's
// ISO C++ mode guarantees). Accuracy is within ~2 ulp of the true value.
#pragma once

namespace k3 {

double portable_exp(double x);

}  // namespace k3
