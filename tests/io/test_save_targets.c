/* What ct_save finds at its path: it writes through to regular files only. A new file takes the
 * umask's mode, a replaced one keeps its mode; a symbolic link is followed (the link stays, the
 * file it leads to is replaced); a read-only file, a FIFO, a device and a link to nothing are
 * refused and left as they were. A name as long as the folder takes saves (its temporary name is
 * cut to fit), a longer one is refused; temporary files of killed saves are removed and reported;
 * a file past the size limit (ulimit -f) is refused without SIGXFSZ.
 * ct_save_check_path says the same without writing. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_common.h"

static char folder[] = "/tmp/ctorch-io-targets-XXXXXX";

static ct_state_dict *checkpoint(double value)
{
    ct_state_dict *sd = ct_state_dict_create();
    int64_t shape[1] = {4};
    ct_tensor *t = ct_full(shape, 1, value, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_add(sd, "w", t), CT_OK);
    ct_release(t);
    return sd;
}

static double saved_value(const char *path)
{
    ct_state_dict *sd = ct_load(path, NULL);
    if (!sd) fail_msg("cannot load %s: %s", path, ct_last_error_message());
    ct_tensor *t = ct_state_dict_get(sd, "w");
    float values[4];
    assert_int_equal(ct_tensor_to_array(t, values, sizeof values), CT_OK);
    ct_release(t);
    ct_state_dict_free(sd);
    return values[0];
}

static const char *in_folder(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", folder, name);
    return buf;
}

/* The names in the folder besides . and .., sorted, comma-separated. */
static void folder_entries(char *buf, size_t size)
{
    struct dirent **list;
    int n = scandir(folder, &list, NULL, alphasort);
    assert_true(n >= 0);
    buf[0] = '\0';
    for (int k = 0; k < n; k++) {
        const char *name = list[k]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            if (buf[0]) strncat(buf, ",", size - strlen(buf) - 1);
            strncat(buf, name, size - strlen(buf) - 1);
        }
        free(list[k]);
    }
    free(list);
}

static void empty_folder(void)
{
    DIR *dir = opendir(folder);
    assert_non_null(dir);
    char path[1024];
    for (struct dirent *e; (e = readdir(dir));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlink(in_folder(path, sizeof path, e->d_name));
    closedir(dir);
}

/* ct_save and ct_save_check_path both fail with status and part. */
static void refused(const ct_state_dict *sd, const char *path, ct_status status, const char *part)
{
    assert_int_equal(ct_save_check_path(path), status);
    assert_error(status, part);
    assert_int_equal(ct_save(sd, path), status);
    if (*path && !strstr(ct_last_error_message(), path))
        fail_msg("'%s' does not name '%s'", ct_last_error_message(), path);
    assert_error(status, part);
}

static void a_replaced_file_keeps_its_mode(void **state)
{
    (void)state;
    char path[512];
    in_folder(path, sizeof path, "private.safetensors");
    ct_state_dict *sd = checkpoint(1);
    mode_t old_mask = umask(022);
    assert_int_equal(ct_save(sd, path), CT_OK);
    struct stat info;
    assert_int_equal(stat(path, &info), 0);
    assert_int_equal(info.st_mode & 0777, 0644); /* new: the umask's */
    const mode_t modes[] = {0600, 0640, 0664};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        assert_int_equal(chmod(path, modes[k]), 0);
        assert_int_equal(ct_save(sd, path), CT_OK);
        assert_int_equal(stat(path, &info), 0);
        assert_int_equal(info.st_mode & 0777, modes[k]);
    }
    umask(old_mask);
    ct_state_dict_free(sd);
    empty_folder();
}

static void a_read_only_file_is_refused_and_left(void **state)
{
    (void)state;
    char path[512];
    in_folder(path, sizeof path, "frozen.safetensors");
    ct_state_dict *sd = checkpoint(1), *other = checkpoint(2);
    assert_int_equal(ct_save(sd, path), CT_OK);
    assert_int_equal(chmod(path, 0444), 0);
    refused(other, path, CT_ERR_IO, "it is read-only (mode 0444)");
    assert_true(saved_value(path) == 1);
    ct_state_dict_free(sd);
    ct_state_dict_free(other);
    empty_folder();
}

/* Links are followed: the file they lead to is written, the link stays a link. */
static void a_symbolic_link_is_followed(void **state)
{
    (void)state;
    char target[512], link[512], entries[1024];
    in_folder(target, sizeof target, "real.safetensors");
    in_folder(link, sizeof link, "latest.safetensors");
    ct_state_dict *first = checkpoint(1), *second = checkpoint(2);
    assert_int_equal(ct_save(first, target), CT_OK);
    assert_int_equal(chmod(target, 0600), 0);
    assert_int_equal(symlink("real.safetensors", link), 0);
    assert_int_equal(ct_save(second, link), CT_OK);
    struct stat info;
    assert_int_equal(lstat(link, &info), 0);
    assert_true(S_ISLNK(info.st_mode));
    assert_int_equal(stat(target, &info), 0);
    assert_int_equal(info.st_mode & 0777, 0600);
    assert_true(saved_value(target) == 2);
    folder_entries(entries, sizeof entries);
    assert_string_equal(entries, "latest.safetensors,real.safetensors");
    /* a link to a read-only file, or to nothing, is refused */
    assert_int_equal(chmod(target, 0400), 0);
    refused(first, link, CT_ERR_IO, "(where its symbolic link leads): it is read-only");
    assert_int_equal(unlink(target), 0);
    refused(first, link, CT_ERR_IO, "is a symbolic link to 'real.safetensors', which does not exist");
    assert_int_equal(lstat(link, &info), 0);
    assert_true(S_ISLNK(info.st_mode));
    ct_state_dict_free(first);
    ct_state_dict_free(second);
    empty_folder();
}

/* A FIFO and a device are not replaced by a regular file: ct_save refuses them. */
static void fifos_devices_and_folders_are_refused(void **state)
{
    (void)state;
    char path[512], entries[1024];
    ct_state_dict *sd = checkpoint(1);
    in_folder(path, sizeof path, "fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    refused(sd, path, CT_ERR_IO, "it is a FIFO (named pipe), not a regular file; ct_save writes regular files only");
    struct stat info;
    assert_int_equal(lstat(path, &info), 0);
    assert_true(S_ISFIFO(info.st_mode));
    in_folder(path, sizeof path, "null");
    if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0) { /* /dev/null's numbers; root only */
        refused(sd, path, CT_ERR_IO, "it is a character device, not a regular file");
        assert_int_equal(lstat(path, &info), 0);
        assert_true(S_ISCHR(info.st_mode));
    }
    in_folder(path, sizeof path, "sub");
    assert_int_equal(mkdir(path, 0700), 0);
    refused(sd, path, CT_ERR_IO, "it is a folder");
    assert_int_equal(rmdir(path), 0);
    in_folder(path, sizeof path, "");
    refused(sd, path, CT_ERR_INVALID_ARGUMENT, "names a folder");
    refused(sd, "", CT_ERR_INVALID_ARGUMENT, "the path is empty");
    in_folder(path, sizeof path, "missing/model.safetensors");
    refused(sd, path, CT_ERR_IO, "/missing' does not exist");
    folder_entries(entries, sizeof entries);
    assert_true(strcmp(entries, "fifo") == 0 || strcmp(entries, "fifo,null") == 0);
    ct_state_dict_free(sd);
    empty_folder();
}

/* NAME_MAX (255 here) is the longest name: ".<name>.tmp-<pid>-<n>" cannot be that long. */
static void names_as_long_as_the_folder_takes_save(void **state)
{
    (void)state;
    long max = pathconf(folder, _PC_NAME_MAX);
    assert_true(max >= 250);
    char name[1024], path[2048], entries[2048];
    const long lengths[] = {250, max};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        memset(name, 'n', (size_t)lengths[k]);
        name[lengths[k]] = '\0';
        in_folder(path, sizeof path, name);
        ct_state_dict *sd = checkpoint((double)k);
        assert_int_equal(ct_save_check_path(path), CT_OK);
        if (ct_save(sd, path) != CT_OK) fail_msg("a name of %ld bytes: %s", lengths[k], ct_last_error_message());
        assert_int_equal(ct_save(sd, path), CT_OK); /* and replaced */
        assert_true(saved_value(path) == (double)k);
        folder_entries(entries, sizeof entries);
        assert_string_equal(entries, name);
        ct_state_dict_free(sd);
        empty_folder();
    }
    memset(name, 'n', (size_t)max + 1);
    name[max + 1] = '\0';
    in_folder(path, sizeof path, name);
    ct_state_dict *sd = checkpoint(1);
    char expected[128];
    snprintf(expected, sizeof expected, "the file name is %ld bytes; the folder takes names of at most %ld", max + 1,
             max);
    refused(sd, path, CT_ERR_INVALID_ARGUMENT, expected);
    ct_state_dict_free(sd);
}

/* The id of a process that has ended. */
static pid_t ended_process(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void make_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "partial", 7), 7);
    close(fd);
}

/* ct_save, with what it writes to stderr (where the log goes) into log. */
static ct_status save_logged(const ct_state_dict *sd, const char *path, char *log, size_t size)
{
    FILE *capture = tmpfile();
    assert_non_null(capture);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    dup2(fileno(capture), STDERR_FILENO);
    ct_status status = ct_save(sd, path);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(capture);
    size_t n = fread(log, 1, size - 1, capture);
    log[n] = '\0';
    fclose(capture);
    return status;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* A save killed between creating its temporary file and the rename leaves ".<name>.tmp-<pid>-<n>":
 * the next save to the name removes those whose process has ended, and says so. */
static void temporaries_of_killed_saves_are_removed(void **state)
{
    (void)state;
    char path[512], stale[1024], live[1024], other[1024], entries[2048], log[4096];
    ct_set_log_level(CT_LOG_WARN);
    in_folder(path, sizeof path, "model.safetensors");
    pid_t dead = ended_process();
    snprintf(stale, sizeof stale, "%s/.model.safetensors.tmp-%ld-0", folder, (long)dead);
    snprintf(live, sizeof live, "%s/.model.safetensors.tmp-%ld-3", folder, (long)getppid());
    snprintf(other, sizeof other, "%s/.model.safetensors.tmp-%ld-x", folder, (long)dead); /* not one */
    make_file(stale);
    make_file(live);
    make_file(other);
    ct_state_dict *sd = checkpoint(7);
    assert_int_equal(save_logged(sd, path, log, sizeof log), CT_OK);
    char expected[2400];
    snprintf(expected, sizeof expected, "ct_save: removed '%s', the temporary file of an earlier save to '%s' that "
             "did not finish (process %ld no longer runs)", stale, path, (long)dead);
    if (!strstr(log, expected)) fail_msg("the log lacks '%s': %s", expected, log);
    assert_false(exists(stale));
    assert_true(exists(live)); /* a save in progress, perhaps */
    assert_true(exists(other));
    assert_true(saved_value(path) == 7);
    empty_folder();

    /* a long name's temporary keeps only the start of the name: found all the same */
    char name[256];
    memset(name, 'q', 250);
    name[250] = '\0';
    in_folder(path, sizeof path, name);
    int kept = (int)pathconf(folder, _PC_NAME_MAX) - 27; /* ".", ".tmp-", 10 digits, "-", 10 digits */
    snprintf(stale, sizeof stale, "%s/.%.*s.tmp-%ld-12", folder, kept, name, (long)dead);
    make_file(stale);
    assert_int_equal(save_logged(sd, path, log, sizeof log), CT_OK);
    if (!strstr(log, "ct_save: removed")) fail_msg("the log lacks the removal: %s", log);
    folder_entries(entries, sizeof entries);
    assert_string_equal(entries, name);
    ct_state_dict_free(sd);
    empty_folder();
}

/* A file larger than the process's file size limit (RLIMIT_FSIZE, `ulimit -f`): refused before
 * its first byte with a message naming the limit, the old file intact, no temporary file; the
 * program is not ended by SIGXFSZ (its default action), which it does not ignore here. */
static void a_file_past_the_size_limit_is_refused_without_a_signal(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/limited.safetensors", folder);
    ct_state_dict *sd = checkpoint(3.0);
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict_free(sd);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        signal(SIGXFSZ, SIG_DFL);
        struct rlimit limit = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
        ct_state_dict *big = ct_state_dict_create();
        ct_tensor *t = ct_full((int64_t[]){4096}, 1, 5.0, CT_F32, CT_DEVICE_CPU);
        if (ct_state_dict_add(big, "w", t) != CT_OK) _exit(11);
        ct_release(t);
        if (ct_save(big, path) != CT_ERR_IO) _exit(12);
        if (!strstr(ct_last_error_message(), "file size limit (ulimit -f, RLIMIT_FSIZE) is 4096")) _exit(13);
        ct_state_dict_free(big);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    if (WIFSIGNALED(status)) fail_msg("the save was ended by signal %d", WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(saved_value(path) == 3.0);
    DIR *d = opendir(folder);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));) entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 1); /* no temporary file beside it */
    empty_folder();
}

static int make_folder(void **state)
{
    (void)state;
    return mkdtemp(folder) ? 0 : -1;
}

static int remove_folder(void **state)
{
    (void)state;
    empty_folder();
    return rmdir(folder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_replaced_file_keeps_its_mode),
        cmocka_unit_test(a_read_only_file_is_refused_and_left),
        cmocka_unit_test(a_symbolic_link_is_followed),
        cmocka_unit_test(fifos_devices_and_folders_are_refused),
        cmocka_unit_test(names_as_long_as_the_folder_takes_save),
        cmocka_unit_test(temporaries_of_killed_saves_are_removed),
        cmocka_unit_test(a_file_past_the_size_limit_is_refused_without_a_signal),
    };
    return cmocka_run_group_tests(tests, make_folder, remove_folder);
}
