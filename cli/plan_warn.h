/* plan_warn.h — warnings on wasteful training plans (cli/plan_warn.c), shared by run and gen. */
#ifndef ETKIT_CLI_PLAN_WARN_H
#define ETKIT_CLI_PLAN_WARN_H

#include "etkit/gen.h"

/* The pipeline bubble of a 1F1B / GPipe plan as a fraction of the step. */
double plan_bubble_fraction(const etk_gen_config *c);
/* Print the warnings for a checked plan (s: its summary, for the layer split; may be NULL);
 * returns how many were printed. */
int plan_warnings(const char *cmd, const etk_gen_config *c, const etk_gen_summary *s);
#endif
