//! Installs a seccomp filter (a classic BPF program over `struct seccomp_data`) on the
//! calling thread and the threads and processes it makes from then on.

/// Sets `no_new_privs` and installs `program`. Returns why it could not (seccomp refused,
/// as under qemu-user), if it could not.
pub fn install(program: &mut [libc::sock_filter]) -> Result<(), String> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| "program too long")?,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: `prctl` with these options reads only `prog` and the program it points to,
    // both alive for the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
        }
        let filter = libc::SECCOMP_MODE_FILTER as libc::c_ulong;
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            filter,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(format!(
                "seccomp filter: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}
