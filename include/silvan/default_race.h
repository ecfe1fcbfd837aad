/*
 * default_race.h
 *		The default schedule with its layout raced on the model itself
 *		(default_race.c).
 */
#ifndef SILVAN_DEFAULT_RACE_H
#define SILVAN_DEFAULT_RACE_H

#include "silvan/compiler.h"

/*
 * ScheduleDefault for options' host profile; where it walks a float forest
 * in lock-step in the perfect layout, the same schedule in the sparse
 * layout raced against it, the faster one kept (*raced then true).  false
 * and a status when a compile or the race fails or is stopped; schedule
 * then holds ScheduleDefault's.
 */
extern bool ScheduleDefaultRaced(const Forest *forest, int32_t batch_size,
								 const CompileOptions *options, Schedule *schedule,
								 bool *raced, SilvanStatus *status);

#endif							/* SILVAN_DEFAULT_RACE_H */
