/*
 * host_choices.h
 *		Choices of code generation that depend on the host CPU
 *		(host_choices.c); the policies that override them are set by
 *		CodegenSetGatherPolicy, CodegenSetCarryPolicy (codegen.h) and
 *		CodegenSetVectorWalkPolicy (compiler.h).
 */
#ifndef SILVAN_HOST_CHOICES_H
#define SILVAN_HOST_CHOICES_H

#include <stdbool.h>

/* Do tile walks gather (AVX2 or AVX-512 gathers) instead of scalar loads? */
extern bool HostHasFastGathers(void);

/* Is a perfect layout's hop one add-with-carry? */
extern bool HostHasCheapCarry(void);

#endif							/* SILVAN_HOST_CHOICES_H */
