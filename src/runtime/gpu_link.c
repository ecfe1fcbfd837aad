/*
 * gpu_link.c
 *		Link an AMDGPU object into an HSA code object with ld.lld, with no
 *		path another user can touch.
 *
 * ld.lld is a separate program (gpu_emit.c says why), so the object, the
 * code object and the linker's messages go through files.  Any role can
 * make a backend link (explain of a model for target rocm needs no GPU),
 * and a backend's files are the server's: a file at a name another local
 * user can guess or see in /tmp, opened without care, lets that user
 * point it at the cluster's own files through a symlink (truncating
 * global/pg_control), or stall the backend on a FIFO.  So every link
 * works in a directory of its own, made by mkdtemp (mode 0700, a fresh
 * name, never an existing path) inside the work directory: the adapter's
 * $PGDATA/silvan_tmp, which only the server's OS user can reach, or
 * $TMPDIR (else /tmp) where none is set, which mkdtemp makes as safe.
 * Nobody else can create a name inside it; even so, what we create is
 * opened with O_CREAT | O_EXCL | O_NOFOLLOW, what we read back with
 * O_NOFOLLOW | O_NONBLOCK and only if it is a regular file, and the
 * linker's messages go to a file descriptor we opened, not a path it
 * opens.  The directory and everything in it go afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "silvan/gpu.h"

extern char **environ;

/* The link's files, in its own directory */
#define LINK_INPUT		"object.o"
#define LINK_OUTPUT		"code.hsaco"
#define LINK_LOG		"linker.log"

static char work_directory[PATH_MAX];

/* Link in private directories under dir (NULL or "": $TMPDIR, else /tmp) */
void
GpuSetWorkDirectory(const char *dir)
{
	snprintf(work_directory, sizeof(work_directory), "%s", dir ? dir : "");
}

/* A failure to link, with why */
static bool
LinkFail(SilvanStatus *status, const char *fmt, const char *a, const char *b)
{
	return StatusFail(status, SILVAN_ERROR_INTERNAL, "could not link GPU code", fmt, a, b);
}

/*
 * The directory links are made in: the work directory, created 0700 if
 * missing and refused unless it is a directory of this user that nobody
 * else may write (it is not followed if it is a symlink); else $TMPDIR
 * or /tmp, where mkdtemp alone is safe
 */
static const char *
LinkBase(SilvanStatus *status)
{
	struct stat st;
	const char *tmp = getenv("TMPDIR");

	if (work_directory[0] == '\0')
		return tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp";
	if (mkdir(work_directory, 0700) != 0 && errno != EEXIST)
	{
		LinkFail(status, "Creating the directory %s failed: %s.", work_directory, strerror(errno));
		return NULL;
	}
	if (lstat(work_directory, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		(st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
	{
		LinkFail(status, "The directory %s is not a directory only this server may write%s.",
				 work_directory, "");
		return NULL;
	}
	return work_directory;
}

/* path = dir/name; false if it does not fit */
static bool
LinkPath(char *path, size_t size, const char *dir, const char *name)
{
	return snprintf(path, size, "%s/%s", dir, name) < (int) size;
}

/* Create dir/name for writing, new and not through a link; -1 and errno on failure */
static int
LinkCreate(const char *dir, const char *name)
{
	char		path[PATH_MAX];

	if (!LinkPath(path, sizeof(path), dir, name))
	{
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* Write all of bytes to fd; false and a status naming the file on failure */
static bool
LinkWrite(int fd, const char *what, const void *bytes, size_t len, SilvanStatus *status)
{
	const char *p = bytes;

	while (len > 0)
	{
		ssize_t		n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return LinkFail(status, "Writing the %s failed: %s.", what, strerror(errno));
		p += n;
		len -= (size_t) n;
	}
	return true;
}

/*
 * Read dir/name whole (malloc'd, NUL-terminated), only if it is a regular
 * file reached without a link; NULL otherwise
 */
static char *
LinkRead(const char *dir, const char *name, size_t *len)
{
	char		path[PATH_MAX];
	struct stat st;
	char	   *buf = NULL;
	size_t		done = 0;
	int			fd;

	*len = 0;
	if (!LinkPath(path, sizeof(path), dir, name) ||
		(fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
		(buf = malloc((size_t) st.st_size + 1)) != NULL)
	{
		while (done < (size_t) st.st_size)
		{
			ssize_t		n = read(fd, buf + done, (size_t) st.st_size - done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done += (size_t) n;
		}
		buf[done] = '\0';
		*len = done;
	}
	close(fd);
	return buf;
}

/* The linker to run: ld.lld from LLVM 14's directory, else ld.lld-14 on PATH */
static const char *
DefaultLinker(void)
{
	if (access("/usr/lib/llvm-14/bin/ld.lld", X_OK) == 0)
		return "/usr/lib/llvm-14/bin/ld.lld";
	return "ld.lld-14";
}

/*
 * Run linker -shared in dir: its input and output named there, its
 * messages to log_fd, stdin from /dev/null; false and a status with the
 * messages on failure
 */
static bool
RunLinker(const char *linker, const char *dir, int log_fd, SilvanStatus *status)
{
	char		in[PATH_MAX];
	char		out[PATH_MAX];
	char	   *argv[] = {(char *) linker, "-shared", "-o", out, in, NULL};
	posix_spawn_file_actions_t actions;
	pid_t		pid;
	int			rc;
	int			wstatus = 0;

	if (!LinkPath(in, sizeof(in), dir, LINK_INPUT) || !LinkPath(out, sizeof(out), dir, LINK_OUTPUT))
		return LinkFail(status, "The directory %s%s is too long a path.", dir, "");
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
	posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
	posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
	rc = posix_spawnp(&pid, linker, &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (rc != 0)
		return StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not link GPU code",
						  "The linker %s could not be started: %s (it comes with the "
						  "package lld-14).", linker, strerror(rc));
	while (waitpid(pid, &wstatus, 0) < 0)
		if (errno != EINTR)
			return LinkFail(status, "Waiting for the linker %s failed: %s.", linker,
							strerror(errno));
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
		return true;
	{
		size_t		len = 0;
		char	   *text = LinkRead(dir, LINK_LOG, &len);

		StatusFail(status, SILVAN_ERROR_INTERNAL, "could not link GPU code",
				   "The linker %s failed (%s %d): %s", linker,
				   WIFEXITED(wstatus) ? "exit status" : "signal",
				   WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus),
				   text && text[0] ? text : "no output.");
		free(text);
		return false;
	}
}

/* Remove the link's directory and what is in it */
static void
LinkCleanUp(const char *dir)
{
	static const char *const names[] = {LINK_INPUT, LINK_OUTPUT, LINK_LOG};
	char		path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (LinkPath(path, sizeof(path), dir, names[i]))
			unlink(path);
	rmdir(dir);
}

/* See gpu.h */
bool
GpuLinkHsaco(const void *object, size_t len, const char *linker, void **hsaco,
			 size_t *hsaco_len, SilvanStatus *status)
{
	const char *base = LinkBase(status);
	char		dir[PATH_MAX];
	int			in_fd;
	int			log_fd = -1;
	bool		ok;

	*hsaco = NULL;
	*hsaco_len = 0;
	if (base == NULL)
		return false;
	if (snprintf(dir, sizeof(dir), "%s/silvan-link-XXXXXX", base) >= (int) sizeof(dir) ||
		mkdtemp(dir) == NULL)
		return LinkFail(status, "Creating a private directory in %s failed: %s.", base,
						strerror(errno));
	if ((in_fd = LinkCreate(dir, LINK_INPUT)) < 0 || (log_fd = LinkCreate(dir, LINK_LOG)) < 0)
		ok = LinkFail(status, "Creating a file in %s failed: %s.", dir, strerror(errno));
	else
		ok = LinkWrite(in_fd, "object file", object, len, status);
	if (in_fd >= 0)
		close(in_fd);
	if (ok)
		ok = RunLinker(linker ? linker : DefaultLinker(), dir, log_fd, status);
	if (log_fd >= 0)
		close(log_fd);
	if (ok && (*hsaco = LinkRead(dir, LINK_OUTPUT, hsaco_len)) == NULL)
		ok = LinkFail(status, "The linker's output in %s could not be read%s.", dir, "");
	LinkCleanUp(dir);
	return ok;
}
